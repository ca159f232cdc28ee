#pragma once
// The two WebSocket encodings of Jupyter messages that clients speak:
//
//  legacy  - text frame: the whole message as JSON plus "channel", with msg_id and msg_type
//            repeated at top level; when buffers exist, a binary frame:
//            u32 BE nbufs, u32 BE offsets[nbufs], JSON, buffers... (jupyter_server's
//            serialize_binary_message).
//  v1      - subprotocol "v1.kernel.websocket.jupyter.org": binary frame
//            u64 LE n, u64 LE offsets[n], channel, header, parent, metadata, content, buffers...
//            (jupyter_server's serialize_msg_to_ws_v1). The kernel's raw JSON parts are relayed
//            as bytes, never re-serialised.
//
// Frames are gather lists (websocket_frame.hpp): both formats reference the message's larger
// parts instead of splicing them into one string.

#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "kernelproto/channel.hpp"
#include "kernelproto/message.hpp"
#include "kernelproto/websocket_frame.hpp"

namespace callisto::kernelproto {

enum class websocket_format { legacy, v1 };

inline constexpr std::string_view v1_subprotocol = "v1.kernel.websocket.jupyter.org";

// Kernel -> client. The message's JSON parts must be valid JSON (they are spliced as is).
// This form copies every byte into the frame.
websocket_frame to_websocket(const message& msg, channel ch, websocket_format format);
// The relay's form: the frame references the message's larger parts and keeps it alive, so
// the bytes go from the buffer they arrived in to the socket. Byte for byte the same frame.
websocket_frame to_websocket(std::shared_ptr<const message> msg, channel ch,
                             websocket_format format);

// Client -> kernel. Validates the frame, the channel name and the JSON parts; fills the routing
// fields. The header must be an object with string msg_id and msg_type. Never throws; on error
// sets ec (wire_error) and, when the header could be read, leaves it in the returned message so
// the caller can address its error reply.
struct client_message {
    channel ch = channel::shell;
    message msg;
};
client_message from_websocket(std::string_view data, bool binary, websocket_format format,
                              std::error_code& ec);

}  // namespace callisto::kernelproto
