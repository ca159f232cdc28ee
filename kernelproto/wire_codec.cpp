#include "kernelproto/wire_codec.hpp"

#include <algorithm>
#include <iterator>

#include "kernelproto/wire_error.hpp"

namespace callisto::kernelproto {

namespace {

constexpr std::size_t signature_hex_size = 64;

bool is_hex_signature(std::string_view s) {
    return s.size() == signature_hex_size && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
           });
}

message fail(std::error_code& ec, wire_error e) {
    ec = e;
    return {};
}

}  // namespace

std::vector<std::string> encode(const message& msg, const hmac_signer& signer) {
    std::vector<std::string> frames;
    frames.reserve(msg.identities.size() + 6 + msg.buffers.size());
    frames.insert(frames.end(), msg.identities.begin(), msg.identities.end());
    frames.emplace_back(delimiter);
    frames.push_back(signer.sign({msg.header, msg.parent_header, msg.metadata, msg.content}));
    frames.push_back(msg.header);
    frames.push_back(msg.parent_header);
    frames.push_back(msg.metadata);
    frames.push_back(msg.content.str());
    for (const auto& b : msg.buffers) frames.push_back(b.str());
    return frames;
}

message decode(std::vector<payload>&& frames, const hmac_signer& signer, std::error_code& ec) {
    return decode(std::move(frames), signer, ec, is_json_object);
}

message decode(std::vector<payload>&& frames, const hmac_signer& signer, std::error_code& ec,
               const std::function<bool(std::string_view)>& content_is_object) {
    ec.clear();
    const auto delim = std::find(frames.begin(), frames.end(), delimiter);
    if (delim == frames.end()) return fail(ec, wire_error::no_delimiter);
    const auto after = static_cast<std::size_t>(std::distance(delim, frames.end())) - 1;
    if (after < 5) return fail(ec, wire_error::too_few_frames);

    const std::string_view signature = *(delim + 1);
    const std::string_view header = *(delim + 2);
    const std::string_view parent = *(delim + 3);
    const std::string_view metadata = *(delim + 4);
    const std::string_view content = *(delim + 5);

    // Authenticate before looking inside: the JSON parser never sees unauthenticated bytes.
    if (signer.enabled()) {
        if (!is_hex_signature(signature)) return fail(ec, wire_error::bad_signature_length);
        if (!signer.verify({header, parent, metadata, content}, signature))
            return fail(ec, wire_error::bad_signature);
    }

    message msg;
    msg.header = std::string(header);
    msg.parent_header = std::string(parent);
    // Header and parent are small and parsed for routing; metadata and content can be many MB
    // and are only validated.
    if (!is_json_object(msg.header) || !is_json_object(msg.parent_header) ||
        !is_json_object(metadata) || !content_is_object(content))
        return fail(ec, wire_error::malformed_json);
    if (!parse_routing_fields(msg)) return fail(ec, wire_error::missing_header_field);

    msg.metadata = std::string(metadata);  // small, and stamped with the sequence number later
    msg.content = std::move(*(delim + 5));
    msg.identities.reserve(static_cast<std::size_t>(std::distance(frames.begin(), delim)));
    for (auto it = frames.begin(); it != delim; ++it) msg.identities.push_back(it->str());
    msg.buffers.assign(std::make_move_iterator(delim + 6), std::make_move_iterator(frames.end()));
    return msg;
}

message decode(std::vector<std::string>&& frames, const hmac_signer& signer, std::error_code& ec) {
    std::vector<payload> parts;
    parts.reserve(frames.size());
    for (auto& f : frames) parts.emplace_back(std::move(f));
    return decode(std::move(parts), signer, ec);
}

}  // namespace callisto::kernelproto
