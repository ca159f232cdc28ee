#pragma once
// Connect's envelope (connectrpc.com/docs/protocol, "Streaming RPCs"): each message of a
// streaming call as 1 flag byte, a 4-byte big-endian length and the message; flag 0x01 marks a
// compressed message, 0x02 the end of the stream (a JSON object, {} or {"error": …}). envd's
// streams (process.Process/Start, Connect, filesystem.Filesystem/WatchDir) use it with the
// JSON codec. Pure: every malformed envelope is unit-tested and fuzzable.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace callisto::gateway::e2b {

enum class envelope_error {
    none = 0,
    truncated_prefix,   // fewer than 5 bytes where a frame begins
    length_past_body,   // the length says more than the body holds
    compressed,         // flag 0x01: no compression was negotiated
    unknown_flags,      // a flag bit Connect does not define
    message_too_large,  // past the caller's limit
    not_one_message,    // a server-streaming request holds exactly one message, then nothing
    missing_end,        // a stream that stops without its end frame
    data_after_end,     // a frame after the end frame
};
const std::error_category& envelope_category();
std::error_code make_error_code(envelope_error e);

struct envelope_frame {
    std::uint8_t flags = 0;
    std::string payload;
    bool end() const { return (flags & 0x02) != 0; }
};

constexpr std::uint8_t end_flag = 0x02;

std::string encode_envelope(std::uint8_t flags, std::string_view payload);

// Every frame of `body`; an error for the first malformed one. `max_message` bounds each.
std::vector<envelope_frame> decode_envelopes(std::string_view body, std::size_t max_message,
                                             std::error_code& ec);

// The one message of a server-streaming call's request (no end frame: the request's end is
// the body's end).
std::optional<std::string> decode_request_message(std::string_view body, std::size_t max_message,
                                                  std::error_code& ec);

// A whole response stream as a client reads it: its messages, and the end frame's JSON;
// missing_end when there is none, data_after_end for frames past it.
struct decoded_stream {
    std::vector<std::string> messages;
    std::string end;
};
std::optional<decoded_stream> decode_response_stream(std::string_view body, std::size_t max_message,
                                                     std::error_code& ec);

}  // namespace callisto::gateway::e2b

namespace std {
template <>
struct is_error_code_enum<callisto::gateway::e2b::envelope_error> : true_type {};
}  // namespace std
