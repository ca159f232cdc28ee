#pragma once
// Everything the reactor thread knows about one kernel: its five sockets, the messages waiting
// for a full pipe, the slow-joiner nudge and the heartbeat. Touched only by the reactor thread.
// Private to transport: zmq.hpp never reaches a public header.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>

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

inline std::size_t index_of(kernelproto::channel ch) { return static_cast<std::size_t>(ch); }

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
    // The socket the reactor addresses as `which`: 0..3 a channel, socket_count the heartbeat.
    zmq::socket_t& socket_at(std::size_t which) {
        return which < socket_count ? sockets[which] : heartbeat;
    }
    // Queued for the reactor to ask ZMQ_EVENTS this round, per socket_at index.
    std::array<bool, socket_count + 1> dirty{};
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
    // (see the marks in kernel_link.cpp). Throws zmq::error_t.
    void connect(zmq::context_t& ctx);
    // The sockets close; the link never connects.
    void fail();

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
    // The next deadline: a nudge, a ping, or a ping's timeout.
    clock_type::time_point next_deadline() const;
};

}  // namespace callisto::transport::detail
