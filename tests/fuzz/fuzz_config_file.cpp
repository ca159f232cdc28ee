// A configuration file (--config): any bytes, through parse_server_config as the server parses
// its command line. It gives a configuration or a message that says why not, and never
// throws; a configuration it gives prints (effective_config, what --print-config shows).
#include <sys/mman.h>
#include <unistd.h>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "gateway/server_config.hpp"

namespace gw = callisto::gateway;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const int fd = ::memfd_create("config", MFD_CLOEXEC);
    if (fd < 0) return 0;
    if (::write(fd, data, size) != static_cast<ssize_t>(size)) {
        ::close(fd);
        return 0;
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const auto parsed = gw::parse_server_config({"--config=" + path}, {});
    ::close(fd);
    if (!parsed.config) {
        if (parsed.message.empty()) std::abort();  // a refusal must say why
        return 0;
    }
    (void)gw::effective_config(*parsed.config).dump();
    return 0;
}
