#pragma once
// The one thread that owns every ZMQ socket of every kernel.
//
// It waits on epoll over every socket's notification fd plus a wake-up fd, drains each ready
// socket until EAGAIN, decodes and verifies each message, and hands it to the link's
// link_events. A wake-up costs what is ready, not what is open; timers sit in a deadline queue.
// Commands from other threads (open, send, close) go through a mutex-guarded queue and the wake-up
// fd; no ZMQ socket is ever touched from another thread. No thread per kernel.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/logger.hpp"
#include "kernelproto/channel.hpp"
#include "kernelproto/connection_info.hpp"
#include "kernelproto/message.hpp"
#include "transport/link_events.hpp"

namespace callisto::transport {

struct link_options {
    // ZMQ routing id shared by the shell and stdin DEALERs (ipykernel answers stdin requests
    // to the shell sender's identity, as jupyter_client's session.bsession), and the session
    // of the reactor's own nudge messages. Empty: a fresh uuid.
    std::string session_id;
    std::chrono::milliseconds nudge_interval{500};
    std::chrono::milliseconds heartbeat_interval{3000};
    // No pong within this time is a missed beat; the REQ socket is then recreated (Lazy Pirate).
    std::chrono::milliseconds heartbeat_timeout{3000};
    // Largest message part accepted from the kernel on iopub, and on the other channels up to
    // 16 MiB (ZMQ_MAXMSGSIZE). ZeroMQ drops a larger message and the connection with it, for
    // good: the reactor then connects a new socket and reports on_message_dropped. 0: no limit.
    std::size_t max_part_bytes = 0;
};

// The part limit on shell, control and stdin, under link_options::max_part_bytes: replies and
// input requests are far smaller than output by nature.
constexpr std::size_t max_reply_part_bytes = 16u << 20;

struct reactor_stats {
    std::uint64_t messages_in = 0;
    std::uint64_t messages_out = 0;
    std::uint64_t bytes_in = 0;
    std::uint64_t bad_messages = 0;
    // Messages the link's events refused (admit() false), dropped unread.
    std::uint64_t messages_refused = 0;
    std::uint64_t links = 0;
    // ZMQ calls that failed (logged; the reactor keeps running).
    std::uint64_t zmq_errors = 0;
    // Outgoing messages given up: pending queue full, a send error, or a channel that cannot send.
    std::uint64_t sends_dropped = 0;
    // Connections ZeroMQ ended over a message part past the limit, each made again.
    std::uint64_t connections_dropped = 0;
};

class reactor {
public:
    explicit reactor(logger log);
    ~reactor();  // stop()
    reactor(const reactor&) = delete;
    reactor& operator=(const reactor&) = delete;

    // Connects DEALERs (shell, control, stdin), a SUB (iopub, subscribed to everything) and a
    // REQ (heartbeat), then nudges with kernel_info_request until connected. Thread-safe.
    link_id open(const kernelproto::connection_info& info, std::shared_ptr<link_events> events,
                 link_options options = {});

    // Signs with the link's key and sends. Thread-safe; ignored for a closed link.
    // Messages on one channel leave in the order send() was called.
    void send(link_id id, kernelproto::channel ch, kernelproto::message msg);

    // Closes the link's sockets (linger 0). Thread-safe; no event is reported after it returns
    // to the reactor thread.
    void close(link_id id);

    // Closes every link and joins the thread. Idempotent.
    void stop();

    reactor_stats stats() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace callisto::transport
