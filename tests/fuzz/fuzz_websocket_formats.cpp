// A client's WebSocket frame in both formats: the legacy JSON text and the v1 binary
// (offset table, channel, parts). Never throws, never reads outside the frame.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>

#include "kernelproto/websocket_format.hpp"

namespace kp = callisto::kernelproto;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const auto format = in.ConsumeBool() ? kp::websocket_format::v1 : kp::websocket_format::legacy;
    const bool binary = in.ConsumeBool();
    const std::string frame = in.ConsumeRemainingBytesAsString();
    std::error_code ec;
    (void)kp::from_websocket(frame, binary, format, ec);
    return 0;
}
