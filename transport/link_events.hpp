#pragma once
// What the reactor reports about one kernel link. Every call but on_open arrives on the reactor
// thread: implementations must not block; they post the work to their own executor (the
// kernel's strand).

#include <cstddef>
#include <cstdint>
#include <system_error>

#include "kernelproto/channel.hpp"
#include "kernelproto/message.hpp"

namespace callisto::transport {

using link_id = std::uint64_t;

class link_events {
public:
    virtual ~link_events() = default;

    // The link's id, from reactor::open() on the caller's thread before the reactor can run
    // anything for the link: a listener that tags its reports with the id must learn it here,
    // not from open()'s return value, which a fast kernel's first reports can outrun.
    virtual void on_open(link_id /*id*/) {}

    // Asked before a message of `bytes` (all its frames) is verified or decoded: false drops it
    // unread, which costs next to nothing, so the reactor always outpaces a flooding kernel.
    virtual bool admit(kernelproto::channel, std::size_t /*bytes*/) { return true; }

    // A decoded, signature-checked message from the kernel. Replies to the reactor's own
    // slow-joiner kernel_info_requests are swallowed and never reported.
    virtual void on_message(kernelproto::channel ch, kernelproto::message msg) = 0;

    // The slow-joiner nudge is done: a kernel_info_reply and an iopub message have both arrived,
    // so iopub is subscribed and nothing the kernel publishes from now on is lost.
    virtual void on_connected() = 0;

    // Heartbeat state changed (true: answering; false: missed beats). Informational only:
    // a process exit, not a missed beat, declares a kernel dead.
    virtual void on_heartbeat(bool beating) = 0;

    // Frames that did not decode (bad signature, malformed JSON, ...). Already counted.
    virtual void on_bad_message(kernelproto::channel ch, std::error_code ec) = 0;

    // The kernel sent a message on `ch` with a part over the link's limit
    // (link_options::max_part_bytes): ZeroMQ dropped it, and the connection with it, for good.
    // The reactor has connected a new socket. Lost with it, unseen: what the kernel sent on
    // `ch` after that message before the new connection was up (on iopub, until its
    // subscription reaches the kernel), and requests still in ZeroMQ's pipe on the old socket.
    virtual void on_message_dropped(kernelproto::channel /*ch*/) {}
};

}  // namespace callisto::transport
