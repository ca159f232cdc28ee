#include "transport/detail/kernel_link.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "kernelproto/wire_codec.hpp"

namespace callisto::transport::detail {
namespace {

namespace kp = callisto::kernelproto;

// Messages ZeroMQ may hold per receiving socket. Few: ZeroMQ reads its socket whenever its
// pipe has room, faster than the reactor verifies big messages, so a large mark lets a kernel
// park gigabytes in the gateway. A burst beyond it waits in the kernel's own send pipe (its
// memory, under its limits) until the reactor reads on: for iopub that needs a PUB without a
// send mark, which launcher/ipykernel_bootstrap.py gives every ipykernel.
constexpr int receive_hwm = 2;
// Replies, input requests: far smaller than output by nature.
constexpr std::size_t max_reply_part_bytes = 16u << 20;
// Messages ZeroMQ may hold per sending socket before they wait in the reactor's queue.
constexpr int send_hwm = 8;

zmq::socket_t heartbeat_socket(zmq::context_t& ctx, const kp::connection_info& info) {
    zmq::socket_t s(ctx, zmq::socket_type::req);
    s.set(zmq::sockopt::linger, 0);
    s.connect(info.heartbeat_endpoint());
    return s;
}

}  // namespace

void kernel_link::connect(zmq::context_t& ctx) {
    using kp::channel;
    // What ZeroMQ holds per socket is bounded by receive_hwm messages of at most the
    // part size limit (bytes held further on are the link events' to bound, see admit()).
    const auto part_limit = [&](std::size_t cap) {
        const std::size_t limit = options.max_part_bytes;
        return limit ? static_cast<std::int64_t>(cap ? std::min(limit, cap) : limit)
                     : std::int64_t{-1};
    };
    const auto max_part = part_limit(0);
    const auto max_reply_part = part_limit(max_reply_part_bytes);
    for (channel ch : {channel::shell, channel::control, channel::stdin_}) {
        zmq::socket_t s(ctx, zmq::socket_type::dealer);
        s.set(zmq::sockopt::linger, 0);
        s.set(zmq::sockopt::rcvhwm, receive_hwm);
        s.set(zmq::sockopt::maxmsgsize, max_reply_part);
        // Few messages in ZeroMQ's own send pipe: the rest wait in `pending`, where their
        // senders' leases still count them (a stopped kernel reads nothing).
        s.set(zmq::sockopt::sndhwm, send_hwm);
        // ipykernel sends input_request to the identity the shell request came from.
        if (ch != channel::control) s.set(zmq::sockopt::routing_id, session);
        s.connect(info.endpoint(ch));
        sockets[index_of(ch)] = std::move(s);
    }
    zmq::socket_t sub(ctx, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::rcvhwm, receive_hwm);
    sub.set(zmq::sockopt::maxmsgsize, max_part);
    sub.set(zmq::sockopt::subscribe, "");
    sub.connect(info.endpoint(channel::iopub));
    sockets[index_of(channel::iopub)] = std::move(sub);
    heartbeat = heartbeat_socket(ctx, info);
}

void kernel_link::fail() {
    failed = true;
    for (auto& s : sockets) s.close();
    heartbeat.close();
}

kp::message kernel_link::make_nudge() {
    kp::message msg = kp::make_message("kernel_info_request", nlohmann::json::object(), session);
    nudge_ids.insert(msg.msg_id);
    return msg;
}

bool kernel_link::becomes_connected(clock_type::time_point now) {
    if (connected || !nudge_replied || !iopub_seen) return false;
    connected = true;
    next_ping = now;
    return true;
}

void kernel_link::send_ping(clock_type::time_point now) {
    ping_outstanding = true;
    ping_sent = now;
    // A ping that cannot leave is a missed beat when the timeout expires.
    heartbeat.send(zmq::str_buffer("ping"), zmq::send_flags::dontwait);
}

bool kernel_link::on_pong() {
    zmq::message_t pong;
    if (!heartbeat.recv(pong, zmq::recv_flags::dontwait)) return false;
    while (pong.more() && heartbeat.recv(pong, zmq::recv_flags::dontwait)) {
    }
    if (!ping_outstanding) return false;
    ping_outstanding = false;
    next_ping = ping_sent + options.heartbeat_interval;
    if (beating) return false;
    beating = true;
    return true;
}

bool kernel_link::on_ping_missed() {
    const bool first_miss = beating;
    beating = false;
    return first_miss;
}

void kernel_link::reconnect_heartbeat(zmq::context_t& ctx) {
    heartbeat.close();
    heartbeat = heartbeat_socket(ctx, info);
}

clock_type::time_point kernel_link::next_deadline() const {
    if (!connected) return next_nudge;
    if (ping_outstanding) return ping_sent + options.heartbeat_timeout;
    return next_ping;
}

}  // namespace callisto::transport::detail
