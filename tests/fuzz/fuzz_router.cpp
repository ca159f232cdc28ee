// Request lines to routes: any method and target, percent-decoding, query parameters.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>

#include "gateway/http/router.hpp"

namespace gw = callisto::gateway;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const std::string method = in.ConsumeRandomLengthString(16);
    const bool static_files = in.ConsumeBool();
    const std::string key = in.ConsumeRandomLengthString(16);
    const std::string target = in.ConsumeRemainingBytesAsString();
    auto r = gw::match_route(method, target, static_files);
    (void)gw::to_string(r.kind);
    (void)gw::query_param(target, key);
    std::string decoded;
    (void)gw::percent_decode(target, decoded, true);
    (void)gw::is_valid_kernel_id(target);
    return 0;
}
