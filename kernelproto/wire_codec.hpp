#pragma once
// The ZMQ side of the wire: [identities..., "<IDS|MSG>", hmac, header, parent, metadata,
// content, buffers...]. Decoding never throws on network bytes and checks, in this order:
// delimiter, at least 5 frames after it, signature length, signature (constant time), only then
// the JSON, then the required header fields.

#include <string>
#include <system_error>
#include <vector>

#include "kernelproto/hmac_signer.hpp"
#include "kernelproto/message.hpp"

namespace callisto::kernelproto {

inline constexpr std::string_view delimiter = "<IDS|MSG>";

std::vector<std::string> encode(const message& msg, const hmac_signer& signer);

// On failure sets ec and returns an empty message. Frames are moved from.
message decode(std::vector<std::string>&& frames, const hmac_signer& signer, std::error_code& ec);

}  // namespace callisto::kernelproto
