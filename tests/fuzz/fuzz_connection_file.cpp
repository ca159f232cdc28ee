// A connection file (kernel.json as a kernel rewrites it): any JSON that parses is read by
// connection_info::from_json, which refuses bad fields with std::exception and nothing else.
#include <exception>

#include <nlohmann/json.hpp>

#include "kernelproto/connection_info.hpp"

namespace kp = callisto::kernelproto;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto doc = nlohmann::json::parse(data, data + size, nullptr, false);
    if (doc.is_discarded()) return 0;
    try {
        (void)kp::connection_info::from_json(doc);
    } catch (const std::exception&) {
        // a refusal, with a reason: fine
    }
    return 0;
}
