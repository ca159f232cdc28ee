#pragma once
// The ZMQ side of the wire: [identities..., "<IDS|MSG>", hmac, header, parent, metadata,
// content, buffers...]. Decoding never throws on network bytes and checks, in this order:
// delimiter, at least 5 frames after it, signature length, signature (constant time), only then
// the JSON, then the required header fields.

#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "kernelproto/hmac_signer.hpp"
#include "kernelproto/message.hpp"

namespace callisto::kernelproto {

inline constexpr std::string_view delimiter = "<IDS|MSG>";

std::vector<std::string> encode(const message& msg, const hmac_signer& signer);

// On failure sets ec and returns an empty message. Frames are moved from: content and buffers
// keep viewing the frames they came in (no copy of a large output).
message decode(std::vector<payload>&& frames, const hmac_signer& signer, std::error_code& ec);
// The same, with the content's JSON check supplied by the caller, who may have started it
// alongside the signature check (a 50 MB content takes about as long to validate as to
// authenticate). It is asked only after the signature verified; its answer decides as
// is_json_object's would.
message decode(std::vector<payload>&& frames, const hmac_signer& signer, std::error_code& ec,
               const std::function<bool(std::string_view)>& content_is_object);
message decode(std::vector<std::string>&& frames, const hmac_signer& signer, std::error_code& ec);

}  // namespace callisto::kernelproto
