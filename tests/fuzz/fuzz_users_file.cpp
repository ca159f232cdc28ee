// A users file (--users): any bytes, read through the same path the server reads it from.
// token_auth::from_users_file accepts it or refuses it with std::runtime_error naming the
// problem, and nothing else.
#include <cstdint>
#include <stdexcept>

#include "gateway/token_auth.hpp"
#include "tests/fuzz/input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const callisto::fuzz::input_file file(data, size);
    if (!file.ok()) return 0;
    try {
        (void)callisto::gateway::token_auth::from_users_file(file.path());
    } catch (const std::runtime_error&) {
        // a refusal, with a reason: fine
    }
    return 0;
}
