#pragma once
// Why bytes from a kernel or a client could not become a message. Never thrown: returned as
// std::error_code (category "callisto.wire"), counted and logged by the caller.

#include <system_error>

namespace callisto::kernelproto {

enum class wire_error {
    // ZMQ frames from a kernel
    no_delimiter = 1,      // no "<IDS|MSG>" frame
    too_few_frames,        // fewer than 5 frames after the delimiter
    bad_signature_length,  // signature is not exactly 64 hex characters
    bad_signature,         // HMAC mismatch
    malformed_json,        // a JSON part does not parse, or is not an object
    missing_header_field,  // header lacks a string msg_id or msg_type
    // WebSocket frames from a client
    empty_frame,
    bad_offsets,  // binary offset table inconsistent with the frame
    missing_channel,
    unknown_channel,
    invalid_utf8,
    // Either side
    too_deep,  // a JSON part nests deeper than max_json_depth
};

const std::error_category& wire_category();
std::error_code make_error_code(wire_error e);

}  // namespace callisto::kernelproto

template <>
struct std::is_error_code_enum<callisto::kernelproto::wire_error> : std::true_type {};
