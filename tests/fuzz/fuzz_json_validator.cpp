// The validator every untrusted JSON passes (depth limit, Python's and JavaScript's
// extensions) and the parser behind it. What the validator accepts, parse_untrusted_json
// must read without throwing.
#include <string>
#include <string_view>

#include "kernelproto/json_validator.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace kp = callisto::kernelproto;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)kp::check_json(text);
    (void)kp::check_json(text, 4);
    (void)kp::parse_untrusted_json(text);
    return 0;
}
