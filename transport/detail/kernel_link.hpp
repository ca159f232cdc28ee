#pragma once
// Everything the reactor thread knows about one kernel: its five sockets and the monitors of
// four of them, the messages waiting for a full pipe, the slow-joiner nudge and the heartbeat.
// Touched only by the reactor thread. Private to transport: zmq.hpp never reaches a public
// header.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <zmq.hpp>

#include "kernelproto/channel.hpp"
#include "kernelproto/connection_info.hpp"
#include "kernelproto/hmac_signer.hpp"
#include "kernelproto/message.hpp"
#include "transport/detail/zmq_frames.hpp"
#include "transport/link_events.hpp"
#include "transport/reactor.hpp"

namespace callisto::transport::detail {

using clock_type = std::chrono::steady_clock;

constexpr std::size_t socket_count = 4;  // shell, control, stdin, iopub; heartbeat is apart
// What the reactor watches per link: the four channel sockets, the heartbeat, then the monitor
// of each channel socket.
constexpr std::size_t heartbeat_slot = socket_count;
constexpr std::size_t first_monitor_slot = socket_count + 1;
constexpr std::size_t slot_count = first_monitor_slot + socket_count;

inline std::size_t index_of(kernelproto::channel ch) { return static_cast<std::size_t>(ch); }
inline kernelproto::channel channel_at(std::size_t index) {
    return static_cast<kernelproto::channel>(index);
}

struct kernel_link {
    link_id id = 0;
    kernelproto::connection_info info;
    std::shared_ptr<link_events> events;
    link_options options;
    kernelproto::hmac_signer signer;
    std::string session;

    bool closed = false;  // close() seen on the reactor thread: report nothing more
    bool failed = false;  // sockets could not be set up: the link never connects

    std::array<zmq::socket_t, socket_count> sockets;  // indexed by channel
    zmq::socket_t heartbeat;
    // Our end (PAIR) of each channel socket's monitor: its disconnections (see
    // on_monitor_event). Indexed by channel.
    std::array<zmq::socket_t, socket_count> monitors;
    std::uint64_t monitor_generation = 0;  // makes each monitor's inproc endpoint its own
    // The socket the reactor addresses as `which`: a channel, the heartbeat, or a monitor.
    zmq::socket_t& socket_at(std::size_t which) {
        if (which < socket_count) return sockets[which];
        if (which == heartbeat_slot) return heartbeat;
        return monitors[which - first_monitor_slot];
    }
    // Queued for the reactor to ask ZMQ_EVENTS this round, per socket_at index.
    std::array<bool, slot_count> dirty{};

    // A connection ZeroMQ ended by itself, per channel: when its monitor said so, unless ZeroMQ
    // says it is connecting again (the kernel closed its end: it is exiting) before then.
    std::array<std::optional<clock_type::time_point>, socket_count> dropped_at{};
    // A message waiting for a full DEALER pipe, with the sender's lease on its bytes
    // (kernelproto::message::lease), which ends once ZeroMQ has taken the frames.
    struct outgoing {
        frames_t frames;
        std::shared_ptr<const void> lease;
    };
    std::array<std::deque<outgoing>, socket_count> pending;

    // Slow-joiner nudge.
    std::unordered_set<std::string> nudge_ids;
    bool nudge_replied = false;
    bool iopub_seen = false;
    bool connected = false;
    clock_type::time_point next_nudge{};
    std::chrono::milliseconds quick_nudge{0};  // while answered but not yet heard on iopub

    // Heartbeat (Lazy Pirate), only once connected.
    bool ping_outstanding = false;
    bool beating = true;
    clock_type::time_point ping_sent{};
    clock_type::time_point next_ping{};

    std::uint64_t bad_seen = 0;

    std::string name() const { return "link " + std::to_string(id); }

    // DEALERs on shell, control and stdin, a SUB on iopub, a REQ on heartbeat, each bounded
    // (see the marks in kernel_link.cpp), and a monitor of each but the heartbeat. Throws
    // zmq::error_t.
    void connect(zmq::context_t& ctx);
    // The channel's socket and its monitor closed and made anew, connected to the kernel again.
    // Throws zmq::error_t, leaving both closed.
    void reconnect_channel(zmq::context_t& ctx, kernelproto::channel ch);

    // What a channel's monitor reports: true when the connection ended and ZeroMQ will not make
    // it again by itself. It ends so when a message had a part over ZMQ_MAXMSGSIZE (a protocol
    // error to ZeroMQ, which drops the message and the connection for good); when the kernel
    // closes its end, ZeroMQ reconnects, and says so (CONNECT_RETRIED) at once.
    void on_monitor_event(kernelproto::channel ch, std::uint16_t event, clock_type::time_point now);
    // The channels whose connection ended for good by `now` (dropped_at + drop_grace); each is
    // reported once.
    std::vector<kernelproto::channel> take_dropped(clock_type::time_point now);
    // The sockets close; the link never connects.
    void fail();

    kernel_link() = default;
    // Closes the channels as close_channel does; the heartbeat has no monitor.
    ~kernel_link();
    kernel_link(const kernel_link&) = delete;
    kernel_link& operator=(const kernel_link&) = delete;

    // The next kernel_info_request of the slow-joiner nudge; its id is remembered so that the
    // reply is recognised as ours.
    kernelproto::message make_nudge();
    // Connected once the nudge was answered and iopub has spoken: true the first time.
    bool becomes_connected(clock_type::time_point now);

    // Heartbeat. Each may throw zmq::error_t; the state stays consistent when it does.
    void send_ping(clock_type::time_point now);
    // Reads the pong; true when it ends a silence (the heartbeat is back).
    bool on_pong();
    // A ping's timeout passed: true when this is the first miss after beats.
    bool on_ping_missed();
    // A REQ that lost its reply is stuck: only a new socket can ask again. Throws
    // zmq::error_t, leaving `heartbeat` closed.
    void reconnect_heartbeat(zmq::context_t& ctx);
    // The next deadline: a nudge, a ping, a ping's timeout, or a dropped connection's grace.
    clock_type::time_point next_deadline() const;

private:
    void connect_channel(zmq::context_t& ctx, kernelproto::channel ch);
    // The channel's monitor stopped, then its reader and the socket closed, in that order:
    // the other order can block ZeroMQ's I/O thread for good (see kernel_link.cpp).
    void close_channel(kernelproto::channel ch);
    void close_channels();
};

}  // namespace callisto::transport::detail
