// multipart/form-data uploads: the Content-Type's boundary and the whole form, parsed and
// checked (paths, parts, limits) before anything is written.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>

#include "gateway/interpreter/api/multipart_form.hpp"

namespace in_ = callisto::gateway::interpreter;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    // Mostly a well-formed header, so the fuzzer spends its time in the body.
    std::string content_type =
        in.ConsumeBool() ? "multipart/form-data; boundary=" + in.ConsumeRandomLengthString(80)
                         : in.ConsumeRandomLengthString(200);
    const std::string body = in.ConsumeRemainingBytesAsString();
    std::string error;
    (void)in_::multipart_boundary(content_type, error);
    in_::multipart_limits limits;
    (void)in_::parse_upload_form(body, content_type, limits, error);
    return 0;
}
