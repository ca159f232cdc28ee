#pragma once
// A Jupyter message as it travels through Callisto.
//
// The four JSON parts are kept serialized exactly as they arrived, so relaying a kernel's
// message to a client never re-serialises it (the v1 WebSocket format copies them as bytes,
// the legacy JSON format splices them). The few header fields routing needs are parsed once.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kernelproto/payload.hpp"

namespace callisto::kernelproto {

struct message {
    std::vector<std::string> identities;  // ZMQ routing prefix (before "<IDS|MSG>")
    std::string header = "{}";            // serialized JSON object
    std::string parent_header = "{}";     // serialized JSON object, "{}" when there is none
    std::string metadata = "{}";
    payload content = "{}";  // can be many MB: may view the received frame
    std::vector<payload> buffers;

    // Parsed from header / parent_header when the message is decoded or made.
    std::string msg_id;
    std::string msg_type;
    std::string session;
    std::string parent_msg_id;  // empty when the parent header is empty

    // Lives as long as the message and every shared copy of it: how a receiver counts the
    // bytes it holds of a sender's messages (gateway/kernels/output/message_budget.hpp). Empty by
    // default.
    std::shared_ptr<const void> lease;
};

// Fills msg_id, msg_type, session and parent_msg_id from the serialized parts.
// Returns false (leaving the fields unspecified) when header is not a JSON object with string
// msg_id and msg_type, or parent_header is not a JSON object.
bool parse_routing_fields(message& msg);

// What a message weighs on the wire: its four JSON parts and its buffers.
std::size_t message_bytes(const message& m);

// True when text is one complete JSON object ("{...}"), without building a DOM (content can be
// many MB). Used to validate the raw parts that are relayed as bytes.
bool is_json_object(std::string_view text);

// A new message as jupyter_client's Session.msg() makes it: fresh msg_id, ISO date,
// protocol version 5.3, the parent's header copied as parent_header.
message make_message(std::string_view msg_type, const nlohmann::json& content,
                     std::string_view session, std::string_view username = "callisto",
                     const message* parent = nullptr);

// The date format of the protocol: "2026-11-21T10:00:00.000123Z" (UTC, six fractional digits).
inline constexpr const char* protocol_version = "5.3";

}  // namespace callisto::kernelproto
