#include "transport/reactor.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "kernelproto/ids.hpp"
#include "kernelproto/wire_codec.hpp"
#include "transport/detail/command_queue.hpp"
#include "transport/detail/deadline_queue.hpp"
#include "transport/detail/kernel_link.hpp"
#include "transport/detail/socket_poller.hpp"
#include "transport/detail/zmq_frames.hpp"

namespace callisto::transport {
namespace {

namespace kp = callisto::kernelproto;
using namespace detail;

// Messages read from one socket per poll round before the others get their turn, so one
// flooding kernel cannot starve the rest.
constexpr int drain_cap = 256;

// Messages waiting for a full DEALER pipe, per link and channel. Far above anything a client
// sends in a burst; past it the gateway is not reading its own backpressure, so drop and say so.
constexpr std::size_t pending_cap = 100'000;

// Bad messages from one link that are logged at warn before only every 1000th is.
constexpr std::uint64_t bad_log_burst = 10;

// The poller reports a socket as its link id and its socket_at index; link ids start at 1,
// so token 0 is free for the command queue's wake-up fd.
constexpr std::uint64_t wake_token = 0;
constexpr unsigned which_bits = 4;
static_assert(slot_count <= (1u << which_bits));

std::uint64_t token_of(link_id id, std::size_t which) { return id << which_bits | which; }
link_id link_of(std::uint64_t token) { return token >> which_bits; }
std::size_t which_of(std::uint64_t token) { return token & ((1u << which_bits) - 1); }

}  // namespace

struct reactor::impl {
    explicit impl(logger log) : log_(log.component("transport")) {
        // Five sockets per kernel: the default limit (1023) would cap us near 200 kernels.
        try {
            ctx_.set(zmq::ctxopt::max_sockets, ctx_.get(zmq::ctxopt::socket_limit));
        } catch (const zmq::error_t& e) {
            log_.warn(std::string("cannot raise the ZMQ socket limit: ") + e.what());
        }
        poller_.watch(commands_.wake_fd(), wake_token);
        thread_ = std::thread([this] { run(); });
        thread_id_ = thread_.get_id();
    }

    ~impl() { stop(); }

    // ---- called from any thread ----

    link_id open(const kp::connection_info& info, std::shared_ptr<link_events> events,
                 link_options options) {
        link_id id = next_id_.fetch_add(1);
        events->on_open(id);
        commands_.push(open_command{id, info, std::move(events), std::move(options)});
        return id;
    }

    void send(link_id id, kp::channel ch, kp::message msg) {
        commands_.push(send_command{id, ch, std::move(msg)});
    }

    void close(link_id id) {
        // From an event handler the link must go quiet at once, not after this round.
        if (on_reactor_thread()) {
            if (auto it = links_.find(id); it != links_.end()) it->second->closed = true;
        }
        commands_.push(close_command{id});
    }

    void stop() {
        commands_.stop();
        // From an event handler we cannot join ourselves; the loop ends after this round and
        // the destructor joins.
        if (on_reactor_thread()) return;
        std::lock_guard lock(join_mutex_);
        if (thread_.joinable()) thread_.join();
    }

    reactor_stats stats() const {
        reactor_stats s;
        s.messages_in = messages_in_.load();
        s.messages_out = messages_out_.load();
        s.bytes_in = bytes_in_.load();
        s.bad_messages = bad_messages_.load();
        s.messages_refused = messages_refused_.load();
        s.links = links_open_.load();
        s.zmq_errors = zmq_errors_.load();
        s.sends_dropped = sends_dropped_.load();
        s.connections_dropped = connections_dropped_.load();
        return s;
    }

private:
    bool on_reactor_thread() const { return std::this_thread::get_id() == thread_id_; }

    // ---- reactor thread ----

    // Each round: commands, then a wait bounded by the nearest deadline (none while sockets are
    // still queued for service), then the sockets that fired or were queued, then due timers.
    // Work per round follows what is ready, not how many kernels are open.
    void run() {
        std::vector<std::uint64_t> fired;
        while (process_commands()) {
            fired.clear();
            auto timeout =
                dirty_.empty() ? wait_timeout(clock_type::now()) : std::chrono::milliseconds(0);
            try {
                poller_.wait(timeout, fired);
            } catch (const std::system_error& e) {
                log_.error(std::string("wait: ") + e.what());
            }
            for (std::uint64_t token : fired) {
                if (token == wake_token) {
                    commands_.clear_wake();
                    continue;
                }
                if (kernel_link* l = live_link(link_of(token))) mark_dirty(*l, which_of(token));
            }
            serve_dirty();
            run_due_timers(clock_type::now());
        }
        // Sockets close (linger 0) before the context is destroyed by the owning thread.
        links_.clear();
        links_open_.store(0);
    }

    // Runs queued commands in order; false once stop() was called.
    bool process_commands() {
        bool stopping = false;
        std::deque<command> batch = commands_.take_all(stopping);
        for (auto& c : batch) {
            try {
                std::visit([this](auto& cmd) { execute(cmd); }, c);
            } catch (const zmq::error_t& e) {
                zmq_error(nullptr, "command", e);
            } catch (const std::exception& e) {
                // Nothing a command carries may end the thread that serves every kernel.
                log_.error(std::string("command failed: ") + e.what());
            }
        }
        return !stopping;
    }

    void execute(open_command& c) {
        auto link = std::make_unique<kernel_link>();
        link->id = c.id;
        link->info = std::move(c.info);
        link->events = std::move(c.events);
        link->options = std::move(c.options);
        // A zero interval would spin the thread that serves every kernel.
        auto at_least = [](std::chrono::milliseconds& v) {
            v = std::max(v, std::chrono::milliseconds(1));
        };
        at_least(link->options.nudge_interval);
        at_least(link->options.heartbeat_interval);
        at_least(link->options.heartbeat_timeout);
        link->signer = kp::hmac_signer(link->info.key);
        link->session =
            link->options.session_id.empty() ? kp::new_uuid() : link->options.session_id;
        try {
            link->connect(ctx_);
        } catch (const zmq::error_t& e) {
            zmq_error(link.get(), "connect", e);
            link->fail();
        } catch (const std::exception& e) {
            log_.error(link->name() + ": cannot connect: " + e.what());
            link->fail();
        }
        kernel_link& l = *link;
        links_.emplace(c.id, std::move(link));
        links_open_.fetch_add(1);
        if (l.failed || !watch(l)) return;
        auto now = clock_type::now();
        send_nudge(l);
        l.next_nudge = now + l.options.nudge_interval;
        reschedule(l);
        log_.debug(l.name() + ": opened, session " + l.session);
    }

    void execute(send_command& c) {
        auto it = links_.find(c.id);
        if (it == links_.end() || it->second->closed) return;  // closed link: ignored
        kernel_link& l = *it->second;
        if (l.failed || c.ch == kp::channel::iopub) {
            if (c.ch == kp::channel::iopub) log_.warn(l.name() + ": cannot send on iopub");
            sends_dropped_.fetch_add(1);
            return;
        }
        frames_t frames;
        try {
            frames = kp::encode(c.msg, l.signer);
        } catch (const std::exception& e) {
            // Only programmer errors get here (a message whose parts are not JSON text).
            log_.error(l.name() + ": cannot encode " + c.msg.msg_type + ": " + e.what());
            sends_dropped_.fetch_add(1);
            return;
        }
        queue_or_send(l, c.ch, std::move(frames), std::move(c.msg.lease));
    }

    void execute(close_command& c) {
        auto it = links_.find(c.id);
        if (it == links_.end()) return;
        log_.debug(it->second->name() + ": closed");
        unwatch(*it->second);
        timers_.cancel(c.id);
        links_.erase(it);  // socket destructors close with linger 0
        links_open_.fetch_sub(1);
    }

    // ---- readiness ----

    // The open link with this id that may still be served; nullptr once closed or failed.
    kernel_link* live_link(link_id id) {
        auto it = links_.find(id);
        if (it == links_.end() || it->second->closed || it->second->failed) return nullptr;
        return it->second.get();
    }

    // False when a socket cannot be watched: the link then fails, as one that cannot connect.
    bool watch(kernel_link& l) {
        for (std::size_t which = 0; which < slot_count; ++which) {
            if (!watch_socket(l, which)) {
                unwatch(l);
                l.fail();
                return false;
            }
        }
        return true;
    }

    bool watch_socket(kernel_link& l, std::size_t which) {
        zmq::socket_t& socket = l.socket_at(which);
        if (!socket) return true;
        try {
            poller_.watch(socket.get(zmq::sockopt::fd), token_of(l.id, which));
        } catch (const std::exception& e) {
            log_.error(l.name() + ": cannot watch its sockets: " + e.what());
            return false;
        }
        // Whatever arrived before the fd was watched has already spent its signal.
        mark_dirty(l, which);
        return true;
    }

    void unwatch(kernel_link& l) {
        for (std::size_t which = 0; which < slot_count; ++which) unwatch_socket(l, which);
    }

    void unwatch_socket(kernel_link& l, std::size_t which) {
        zmq::socket_t& socket = l.socket_at(which);
        if (!socket) return;
        try {
            poller_.unwatch(socket.get(zmq::sockopt::fd));
        } catch (const zmq::error_t& e) {
            zmq_error(&l, "unwatch", e);
        }
    }

    // Queues the socket to have its ZMQ_EVENTS asked this round: after it fired, and after every
    // send or receive on it, which can swallow the signal of a message that arrived meanwhile.
    void mark_dirty(kernel_link& l, std::size_t which) {
        if (l.dirty[which]) return;
        l.dirty[which] = true;
        dirty_.emplace_back(l.id, which);
    }

    void serve_dirty() {
        std::vector<std::pair<link_id, std::size_t>> batch;
        batch.swap(dirty_);
        for (auto [id, which] : batch) {
            kernel_link* l = live_link(id);
            if (!l) continue;
            l->dirty[which] = false;
            serve(*l, which);
            reschedule(*l);  // a pong or the end of the nudge moves the link's deadline
        }
    }

    // Reads and flushes what the socket is ready for. One still readable after drain_cap
    // messages is served again next round, after the others had their turn.
    void serve(kernel_link& l, std::size_t which) {
        zmq::socket_t& socket = l.socket_at(which);
        if (!socket) return;
        const int events = events_of(l, socket);
        if (which == heartbeat_slot) {
            if (events & ZMQ_POLLIN) on_heartbeat_readable(l);
        } else if (which >= first_monitor_slot) {
            if (events & ZMQ_POLLIN) on_monitor_readable(l, channel_at(which - first_monitor_slot));
        } else {
            auto ch = static_cast<kp::channel>(which);
            if ((events & ZMQ_POLLOUT) && !l.pending[which].empty()) flush_pending(l, ch);
            if (events & ZMQ_POLLIN) on_readable(l, ch);
        }
        if (l.closed || !socket) return;
        const int after = events_of(l, socket);
        const bool can_flush =
            which < socket_count && (after & ZMQ_POLLOUT) && !l.pending[which].empty();
        // A monitor's events are few: the next round reads the rest.
        if ((after & ZMQ_POLLIN) || can_flush) mark_dirty(l, which);
    }

    int events_of(kernel_link& l, zmq::socket_t& socket) {
        try {
            return socket.get(zmq::sockopt::events);
        } catch (const zmq::error_t& e) {
            zmq_error(&l, "events", e);
            return 0;
        }
    }

    // ---- timers ----

    void reschedule(kernel_link& l) {
        if (l.closed || l.failed)
            timers_.cancel(l.id);
        else
            timers_.schedule(l.id, l.next_deadline());
    }

    // The wait lasts until the nearest nudge or heartbeat deadline.
    std::chrono::milliseconds wait_timeout(clock_type::time_point now) const {
        auto nearest = timers_.nearest();
        if (!nearest) return std::chrono::milliseconds(-1);
        if (*nearest <= now) return std::chrono::milliseconds(0);
        // Round up so we do not wake a fraction of a millisecond early and spin.
        return std::chrono::ceil<std::chrono::milliseconds>(*nearest - now);
    }

    void run_due_timers(clock_type::time_point now) {
        for (link_id id : timers_.take_due(now)) {
            if (kernel_link* l = live_link(id)) {
                on_deadline(*l, now);
                reschedule(*l);
            }
        }
    }

    void on_deadline(kernel_link& l, clock_type::time_point now) {
        for (kp::channel ch : l.take_dropped(now)) on_connection_dropped(l, ch);
        if (l.closed || l.failed) return;
        if (!l.connected) {
            if (now >= l.next_nudge) {
                // A backed-up shell pipe means the kernel is not reading yet: more nudges
                // would only pile up behind the ones already waiting.
                if (l.pending[index_of(kp::channel::shell)].empty()) send_nudge(l);
                l.next_nudge = now + l.options.nudge_interval;
            }
            return;
        }
        if (l.ping_outstanding) {
            if (now >= l.ping_sent + l.options.heartbeat_timeout) on_heartbeat_missed(l, now);
        } else if (now >= l.next_ping) {
            send_ping(l, now);
        }
    }

    // ---- slow-joiner nudge ----

    void send_nudge(kernel_link& l) {
        queue_or_send(l, kp::channel::shell, kp::encode(l.make_nudge(), l.signer));
    }

    // The kernel answers, but the status it published went out before our iopub subscription
    // reached it (ZeroMQ's slow joiner): ask again in 5 ms, then 10, 20... rather than a whole
    // nudge interval later, which one fresh kernel in ten used to wait.
    void nudge_soon(kernel_link& l) {
        using std::chrono::milliseconds;
        l.quick_nudge = std::min(l.quick_nudge.count() ? l.quick_nudge * 2 : milliseconds(5),
                                 l.options.nudge_interval);
        l.next_nudge = std::min(l.next_nudge, clock_type::now() + l.quick_nudge);
        reschedule(l);
    }

    void check_connected(kernel_link& l) {
        if (!l.becomes_connected(clock_type::now())) return;
        log_.debug(l.name() + ": connected");
        notify(l, [](link_events& e) { e.on_connected(); });
    }

    // ---- receiving ----

    void on_readable(kernel_link& l, kp::channel ch) {
        zmq::socket_t& socket = l.sockets[index_of(ch)];
        received_t frames;
        for (int n = 0; n < drain_cap && !l.closed; ++n) {
            std::size_t bytes = 0;
            try {
                if (!recv_frames(socket, frames, bytes)) return;
            } catch (const zmq::error_t& e) {
                zmq_error(&l, "recv", e);
                return;
            }
            messages_in_.fetch_add(1, std::memory_order_relaxed);
            bytes_in_.fetch_add(bytes, std::memory_order_relaxed);
            bool admitted = true;
            notify(l, [&](link_events& e) { admitted = e.admit(ch, bytes); });
            if (!admitted) {
                messages_refused_.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            std::error_code ec;
            kp::message msg = decode_received(std::move(frames), l.signer, ec);
            if (ec) {
                on_bad_message(l, ch, ec);
                continue;
            }
            deliver(l, ch, std::move(msg));
        }
    }

    void deliver(kernel_link& l, kp::channel ch, kp::message msg) {
        if (ch == kp::channel::shell && !msg.parent_msg_id.empty() &&
            l.nudge_ids.contains(msg.parent_msg_id)) {
            // Our own nudge's reply: the gateway never asked for it. Late ones too.
            if (msg.msg_type == "kernel_info_reply") {
                l.nudge_replied = true;
                check_connected(l);
                if (!l.connected) nudge_soon(l);
            }
            return;
        }
        bool first_iopub = ch == kp::channel::iopub && !l.iopub_seen;
        if (ch == kp::channel::iopub) l.iopub_seen = true;
        notify(l, [&](link_events& e) { e.on_message(ch, std::move(msg)); });
        if (first_iopub) check_connected(l);
    }

    void on_bad_message(kernel_link& l, kp::channel ch, std::error_code ec) {
        bad_messages_.fetch_add(1, std::memory_order_relaxed);
        ++l.bad_seen;
        // A hostile kernel can send garbage at line rate; keep the log readable.
        if (l.bad_seen <= bad_log_burst || l.bad_seen % 1000 == 0) {
            log_.warn(l.name() + ": bad message on " + std::string(kp::to_string(ch)) + ": " +
                      ec.message() + " (" + std::to_string(l.bad_seen) + " so far)");
        }
        notify(l, [&](link_events& e) { e.on_bad_message(ch, ec); });
    }

    // ---- connections ZeroMQ ended ----

    void on_monitor_readable(kernel_link& l, kp::channel ch) {
        zmq::socket_t& monitor = l.monitors[index_of(ch)];
        const auto now = clock_type::now();
        for (int n = 0; n < drain_cap; ++n) {
            // Two frames: the event (u16) and its value (u32), then the endpoint.
            zmq::message_t event, endpoint;
            try {
                if (!monitor.recv(event, zmq::recv_flags::dontwait)) return;
                while (event.more() && monitor.recv(endpoint, zmq::recv_flags::dontwait) &&
                       endpoint.more()) {
                }
            } catch (const zmq::error_t& e) {
                zmq_error(&l, "monitor recv", e);
                return;
            }
            if (event.size() < sizeof(std::uint16_t)) continue;
            std::uint16_t id = 0;
            std::memcpy(&id, event.data(), sizeof id);
            l.on_monitor_event(ch, id, now);
        }
    }

    // ZeroMQ dropped a message over the part limit, and the connection with it, and will not
    // connect again: a new socket does, and the link's events hear what was lost.
    void on_connection_dropped(kernel_link& l, kp::channel ch) {
        connections_dropped_.fetch_add(1, std::memory_order_relaxed);
        const std::string limit =
            l.options.max_part_bytes
                ? std::to_string(ch == kp::channel::iopub
                                     ? l.options.max_part_bytes
                                     : std::min(l.options.max_part_bytes, max_reply_part_bytes))
                : std::string("no");
        log_.warn(l.name() + ": the kernel sent a message on " + std::string(kp::to_string(ch)) +
                  " with a part over the limit (" + limit +
                  " bytes); ZeroMQ dropped it with the connection, which is made again");
        unwatch_socket(l, index_of(ch));
        unwatch_socket(l, first_monitor_slot + index_of(ch));
        try {
            l.reconnect_channel(ctx_, ch);
        } catch (const zmq::error_t& e) {
            zmq_error(&l, "reconnect " + std::string(kp::to_string(ch)), e);
        }
        if (l.sockets[index_of(ch)]) watch_socket(l, index_of(ch));
        if (l.monitors[index_of(ch)]) watch_socket(l, first_monitor_slot + index_of(ch));
        notify(l, [&](link_events& e) { e.on_message_dropped(ch); });
    }

    // ---- sending ----

    void queue_or_send(kernel_link& l, kp::channel ch, frames_t frames,
                       std::shared_ptr<const void> lease = {}) {
        auto& queue = l.pending[index_of(ch)];
        // Behind earlier messages still waiting, to keep the order per channel.
        if (queue.empty()) {
            switch (try_send(l, ch, frames)) {
                case send_result::sent: return;
                case send_result::failed: return;
                case send_result::would_block: break;
            }
        }
        if (queue.size() >= pending_cap) {
            sends_dropped_.fetch_add(1);
            log_.error(l.name() + ": " + std::string(kp::to_string(ch)) +
                       " send queue full, message dropped");
            return;
        }
        if (queue.empty())
            log_.debug(l.name() + ": " + std::string(kp::to_string(ch)) +
                       " pipe full, queueing in the reactor");
        queue.push_back({std::move(frames), std::move(lease)});
    }

    send_result try_send(kernel_link& l, kp::channel ch, const frames_t& frames) {
        mark_dirty(l, index_of(ch));
        send_result r = send_result::failed;
        try {
            r = send_frames(l.sockets[index_of(ch)], frames);
        } catch (const zmq::error_t& e) {
            zmq_error(&l, "send", e);
        }
        if (r == send_result::sent) messages_out_.fetch_add(1, std::memory_order_relaxed);
        if (r == send_result::failed) sends_dropped_.fetch_add(1);
        return r;
    }

    void flush_pending(kernel_link& l, kp::channel ch) {
        auto& queue = l.pending[index_of(ch)];
        while (!queue.empty()) {
            if (try_send(l, ch, queue.front().frames) == send_result::would_block) return;
            queue.pop_front();
        }
    }

    // ---- heartbeat ----

    void send_ping(kernel_link& l, clock_type::time_point now) {
        mark_dirty(l, socket_count);
        try {
            l.send_ping(now);
        } catch (const zmq::error_t& e) {
            zmq_error(&l, "heartbeat send", e);
        }
    }

    void on_heartbeat_readable(kernel_link& l) {
        bool back = false;
        try {
            back = l.on_pong();
        } catch (const zmq::error_t& e) {
            zmq_error(&l, "heartbeat recv", e);
            return;
        }
        if (back) {
            log_.info(l.name() + ": heartbeat is back");
            notify(l, [](link_events& e) { e.on_heartbeat(true); });
        }
    }

    void on_heartbeat_missed(kernel_link& l, clock_type::time_point now) {
        unwatch_socket(l, socket_count);
        try {
            l.reconnect_heartbeat(ctx_);
        } catch (const zmq::error_t& e) {
            zmq_error(&l, "heartbeat reconnect", e);
        }
        // Without a watch the pongs go unseen, which the next timeouts report as missed beats.
        if (l.heartbeat) watch_socket(l, socket_count);
        if (l.on_ping_missed()) {
            log_.warn(l.name() + ": heartbeat missed");
            notify(l, [](link_events& e) { e.on_heartbeat(false); });
        }
        if (l.heartbeat) {
            send_ping(l, now);
        } else {
            // Could not recreate the socket: try again after another timeout.
            l.ping_sent = now;
        }
    }

    // ---- helpers ----

    template <class F>
    void notify(kernel_link& l, F&& f) {
        if (l.closed || !l.events) return;
        try {
            f(*l.events);
        } catch (const std::exception& e) {
            // A throwing handler is a bug in the gateway; it must not take every kernel down.
            log_.error(l.name() + ": event handler threw: " + e.what());
        } catch (...) {
            log_.error(l.name() + ": event handler threw");
        }
    }

    void zmq_error(const kernel_link* l, std::string_view what, const zmq::error_t& e) {
        zmq_errors_.fetch_add(1, std::memory_order_relaxed);
        std::string text = l ? l->name() + ": " : std::string();
        log_.error(text + std::string(what) + ": " + e.what());
    }

    logger log_;
    zmq::context_t ctx_;
    command_queue commands_;  // stop() joins the thread before the destructor closes its fd
    socket_poller poller_;
    deadline_queue timers_;                               // reactor thread only
    std::vector<std::pair<link_id, std::size_t>> dirty_;  // reactor thread only

    std::mutex join_mutex_;
    std::thread thread_;
    std::thread::id thread_id_;

    std::atomic<link_id> next_id_{1};
    std::unordered_map<link_id, std::unique_ptr<kernel_link>> links_;  // reactor thread only

    std::atomic<std::uint64_t> messages_in_{0};
    std::atomic<std::uint64_t> messages_out_{0};
    std::atomic<std::uint64_t> bytes_in_{0};
    std::atomic<std::uint64_t> bad_messages_{0};
    std::atomic<std::uint64_t> messages_refused_{0};
    std::atomic<std::uint64_t> links_open_{0};
    std::atomic<std::uint64_t> zmq_errors_{0};
    std::atomic<std::uint64_t> sends_dropped_{0};
    std::atomic<std::uint64_t> connections_dropped_{0};
};

reactor::reactor(logger log) : impl_(std::make_unique<impl>(std::move(log))) {}

reactor::~reactor() { stop(); }

link_id reactor::open(const kernelproto::connection_info& info, std::shared_ptr<link_events> events,
                      link_options options) {
    return impl_->open(info, std::move(events), std::move(options));
}

void reactor::send(link_id id, kernelproto::channel ch, kernelproto::message msg) {
    impl_->send(id, ch, std::move(msg));
}

void reactor::close(link_id id) { impl_->close(id); }

void reactor::stop() { impl_->stop(); }

reactor_stats reactor::stats() const { return impl_->stats(); }

}  // namespace callisto::transport
