// A configuration file (--config): any bytes, through parse_server_config as the server parses
// its command line. It gives a configuration or a message that says why not, and never
// throws; a configuration it gives prints (effective_config, what --print-config shows).
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "gateway/server_config.hpp"
#include "tests/fuzz/input_file.hpp"

namespace gw = callisto::gateway;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const callisto::fuzz::input_file file(data, size);
    if (!file.ok()) return 0;
    const auto parsed = gw::parse_server_config({"--config=" + file.path()}, {});
    if (!parsed.config) {
        if (parsed.message.empty()) std::abort();  // a refusal must say why
        return 0;
    }
    (void)gw::effective_config(*parsed.config).dump();
    return 0;
}
