#pragma once
// Multipart messages in and out of a ZeroMQ socket, without blocking, and their decoding.
// Private to transport: zmq.hpp never reaches a public header.

#include <cstddef>
#include <string>
#include <system_error>
#include <vector>

#include <zmq.hpp>

#include "kernelproto/hmac_signer.hpp"
#include "kernelproto/message.hpp"
#include "kernelproto/payload.hpp"

namespace callisto::transport::detail {

using frames_t = std::vector<std::string>;  // to send
using received_t =
    std::vector<kernelproto::payload>;  // received: large frames are views of ZeroMQ's

enum class send_result { sent, would_block, failed };

// Reads one multipart message without blocking; false when none is waiting. `bytes` grows by
// the message's size.
bool recv_frames(zmq::socket_t& socket, received_t& frames, std::size_t& bytes);

// Sends one multipart message without blocking. Only the first part can meet the HWM: once it
// is accepted, ZMQ takes the rest of the message into the same pipe.
send_result send_frames(zmq::socket_t& socket, const frames_t& frames);

// Verifies and decodes; a large content is validated on a helper thread while this one checks
// the signature.
kernelproto::message decode_received(received_t&& frames, const kernelproto::hmac_signer& signer,
                                     std::error_code& ec);

}  // namespace callisto::transport::detail
