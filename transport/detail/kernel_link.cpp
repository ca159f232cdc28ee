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
// send mark, which launcher/kernelspec/ipykernel_bootstrap.py gives every ipykernel.
constexpr int receive_hwm = 2;
// Messages ZeroMQ may hold per sending socket before they wait in the reactor's queue.
constexpr int send_hwm = 8;
// How long after a disconnection ZeroMQ has to say it connects again (it says so at once, from
// the same I/O thread) before the connection counts as ended for good.
constexpr std::chrono::milliseconds drop_grace{500};

zmq::socket_t heartbeat_socket(zmq::context_t& ctx, const kp::connection_info& info) {
    zmq::socket_t s(ctx, zmq::socket_type::req);
    s.set(zmq::sockopt::linger, 0);
    s.connect(info.heartbeat_endpoint());
    return s;
}

}  // namespace

void kernel_link::connect(zmq::context_t& ctx) {
    using kp::channel;
    for (channel ch : {channel::shell, channel::control, channel::stdin_, channel::iopub})
        connect_channel(ctx, ch);
    heartbeat = heartbeat_socket(ctx, info);
}

void kernel_link::connect_channel(zmq::context_t& ctx, kp::channel ch) {
    using kp::channel;
    // What ZeroMQ holds per socket is bounded by receive_hwm messages of at most the
    // part size limit (bytes held further on are the link events' to bound, see admit()).
    const auto part_limit = [&](std::size_t cap) {
        const std::size_t limit = options.max_part_bytes;
        return limit ? static_cast<std::int64_t>(cap ? std::min(limit, cap) : limit)
                     : std::int64_t{-1};
    };
    zmq::socket_t s;
    if (ch == channel::iopub) {
        s = zmq::socket_t(ctx, zmq::socket_type::sub);
        s.set(zmq::sockopt::linger, 0);
        s.set(zmq::sockopt::rcvhwm, receive_hwm);
        s.set(zmq::sockopt::maxmsgsize, part_limit(0));
        s.set(zmq::sockopt::subscribe, "");
    } else {
        s = zmq::socket_t(ctx, zmq::socket_type::dealer);
        s.set(zmq::sockopt::linger, 0);
        s.set(zmq::sockopt::rcvhwm, receive_hwm);
        s.set(zmq::sockopt::maxmsgsize, part_limit(max_reply_part_bytes));
        // Few messages in ZeroMQ's own send pipe: the rest wait in `pending`, where their
        // senders' leases still count them (a stopped kernel reads nothing).
        s.set(zmq::sockopt::sndhwm, send_hwm);
        // ipykernel sends input_request to the identity the shell request came from.
        if (ch != channel::control) s.set(zmq::sockopt::routing_id, session);
    }
    // Before the connection exists, so that no disconnection goes unseen. Only the events
    // that tell a connection ZeroMQ ended for good from one it makes again.
    const std::string endpoint = "inproc://callisto-monitor-" + std::to_string(id) + "-" +
                                 std::string(kp::to_string(ch)) + "-" +
                                 std::to_string(++monitor_generation);
    if (zmq_socket_monitor(s.handle(), endpoint.c_str(),
                           ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECT_RETRIED) != 0)
        throw zmq::error_t();
    zmq::socket_t monitor(ctx, zmq::socket_type::pair);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect(endpoint);
    s.connect(info.endpoint(ch));
    sockets[index_of(ch)] = std::move(s);
    monitors[index_of(ch)] = std::move(monitor);
    dropped_at[index_of(ch)].reset();
}

kernel_link::~kernel_link() { close_channels(); }

void kernel_link::close_channel(kp::channel ch) {
    zmq::socket_t& s = sockets[index_of(ch)];
    // ZeroMQ's I/O thread writes monitor events with a blocking send, and writes one when the
    // kernel's end goes away while the socket is still being torn down (zmq_close returns at
    // once; the teardown is the I/O thread's): with our reader closed, that send never returns,
    // and the I/O thread, shared by every kernel, serves none of them again. So the monitor
    // stops first, synchronously: no event is written after zmq_socket_monitor returns.
    if (s && monitors[index_of(ch)]) zmq_socket_monitor(s.handle(), nullptr, 0);
    monitors[index_of(ch)].close();
    s.close();
}

void kernel_link::close_channels() {
    for (std::size_t i = 0; i < socket_count; ++i) close_channel(channel_at(i));
}

void kernel_link::reconnect_channel(zmq::context_t& ctx, kp::channel ch) {
    close_channel(ch);
    connect_channel(ctx, ch);
}

void kernel_link::on_monitor_event(kp::channel ch, std::uint16_t event,
                                   clock_type::time_point now) {
    auto& at = dropped_at[index_of(ch)];
    if (event == ZMQ_EVENT_DISCONNECTED)
        at = now;
    else if (event == ZMQ_EVENT_CONNECT_RETRIED)
        at.reset();
}

std::vector<kp::channel> kernel_link::take_dropped(clock_type::time_point now) {
    std::vector<kp::channel> dropped;
    for (std::size_t i = 0; i < socket_count; ++i) {
        if (!dropped_at[i] || now < *dropped_at[i] + drop_grace) continue;
        dropped_at[i].reset();
        dropped.push_back(channel_at(i));
    }
    return dropped;
}

void kernel_link::fail() {
    failed = true;
    close_channels();
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
    clock_type::time_point next;
    if (!connected)
        next = next_nudge;
    else if (ping_outstanding)
        next = ping_sent + options.heartbeat_timeout;
    else
        next = next_ping;
    for (const auto& at : dropped_at)
        if (at) next = std::min(next, *at + drop_grace);
    return next;
}

}  // namespace callisto::transport::detail
