// A users file (--users): any bytes, read through the same path the server reads it from.
// token_auth::from_users_file accepts it or refuses it with std::runtime_error naming the
// problem; a file it accepts knows each of its users by name.
#include <sys/mman.h>
#include <unistd.h>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "gateway/token_auth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const int fd = ::memfd_create("users", MFD_CLOEXEC);
    if (fd < 0) return 0;
    if (::write(fd, data, size) != static_cast<ssize_t>(size)) {
        ::close(fd);
        return 0;
    }
    try {
        (void)callisto::gateway::token_auth::from_users_file("/proc/self/fd/" + std::to_string(fd));
    } catch (const std::runtime_error&) {
        // a refusal, with a reason: fine
    }
    ::close(fd);
    return 0;
}
