// The ZMQ wire decoder with its HMAC check. Random frames rarely carry a valid signature, so
// half the inputs are signed here with the key the decoder checks: the fuzzer then reaches the
// JSON and header checks behind the signature. A message that decodes must encode and decode
// again to the same routing fields.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kernelproto/hmac_signer.hpp"
#include "kernelproto/wire_codec.hpp"

namespace kp = callisto::kernelproto;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    static const kp::hmac_signer signer("fuzz-key-0123456789abcdef");
    const bool sign = in.ConsumeBool();
    std::vector<std::string> frames;
    if (sign) {
        const auto ids = in.ConsumeIntegralInRange<int>(0, 2);
        for (int i = 0; i < ids; ++i) frames.push_back(in.ConsumeRandomLengthString(64));
        std::string parts[4];
        for (auto& part : parts) part = in.ConsumeRandomLengthString(4096);
        frames.push_back(std::string(kp::delimiter));
        frames.push_back(signer.sign({parts[0], parts[1], parts[2], parts[3]}));
        for (auto& part : parts) frames.push_back(part);
        const auto buffers = in.ConsumeIntegralInRange<int>(0, 2);
        for (int i = 0; i < buffers; ++i) frames.push_back(in.ConsumeRandomLengthString(256));
    } else {
        while (in.remaining_bytes() > 0 && frames.size() < 12)
            frames.push_back(in.ConsumeRandomLengthString(4096));
    }
    std::error_code ec;
    auto msg = kp::decode(std::move(frames), signer, ec);
    if (ec) return 0;
    std::error_code again;
    auto round = kp::decode(kp::encode(msg, signer), signer, again);
    if (again || round.msg_type != msg.msg_type || round.msg_id != msg.msg_id ||
        round.parent_msg_id != msg.parent_msg_id)
        std::abort();  // what decodes must survive its own encoding
    return 0;
}
