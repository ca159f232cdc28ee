#include "gateway/http/websocket_channel.hpp"
#include "gateway/http/beast.hpp"

#include <boost/beast/http/field.hpp>

#include "gateway/http/websocket_subprotocols.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;

namespace {

constexpr std::size_t read_chunk = 256 * 1024;
constexpr std::size_t max_close_reason = 120;  // a close frame carries at most 123 bytes
// While the host is saturated, a silent client is closed only after this many ping timeouts.
constexpr int starved_timeouts = 10;

std::string seconds_text(std::chrono::steady_clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

}  // namespace

websocket_channel::websocket_channel(client_stream&& stream, limits socket_limits, logger log,
                                     std::string name, connection_limiter::slot slot)
    : ws_(std::move(stream)),
      slot_(std::move(slot)),
      limits_(socket_limits),
      log_(std::move(log)),
      name_(std::move(name)),
      keepalive_(ws_.get_executor()) {}

void websocket_channel::accept(http_request upgrade, std::string subprotocol,
                               std::weak_ptr<void> owner, websocket_handler& handler) {
    owner_ = std::move(owner);
    handler_ = &handler;
    ws_.next_layer().tcp().expires_never();  // the WebSocket keeps its own timeouts
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);
    // Pings and the silence are judged here (schedule_keepalive), not by Beast's idle timeout,
    // which closes without a word and knows nothing of a starved host.
    timeouts.idle_timeout = websocket::stream_base::none();
    timeouts.keep_alive_pings = false;
    ws_.set_option(timeouts);
    ws_.control_callback([this](websocket::frame_type, beast::string_view) {
        last_heard_ = std::chrono::steady_clock::now();  // a pong (or ping) counts as heard
    });
    ws_.read_message_max(0);  // enforced per message in on_read, without dropping the socket
    ws_.auto_fragment(false);
    if (subprotocol.empty() &&
        offers_subprotocol(upgrade[http::field::sec_websocket_protocol], auth_subprotocol))
        subprotocol = auth_subprotocol;
    ws_.set_option(websocket::stream_base::decorator(
        [subprotocol = std::move(subprotocol)](websocket::response_type& res) {
            res.set(http::field::server, "callisto");
            if (!subprotocol.empty()) res.set(http::field::sec_websocket_protocol, subprotocol);
        }));
    ws_.async_accept(upgrade, [this, keep = keep_alive()](beast::error_code ec) { on_accept(ec); });
}

void websocket_channel::on_accept(beast::error_code ec) {
    if (ec) {
        log_.debug(name_ + " accept failed: " + ec.message());
        return;
    }
    accepted_ = true;
    if (closing_) {  // closed while the handshake was under way
        if (drain_ && !queue_.empty()) return do_write();  // on_write closes after the last
        return do_close();
    }
    handler_->on_open();
    if (!queue_.empty() && !writing_) do_write();
    last_heard_ = std::chrono::steady_clock::now();
    schedule_keepalive();
    do_read();
}

// ---- keepalive -------------------------------------------------------------------------------

void websocket_channel::schedule_keepalive() {
    keepalive_.expires_after(limits_.ping_interval);
    keepalive_.async_wait([this, keep = keep_alive()](beast::error_code ec) {
        if (!ec) on_keepalive_tick();
    });
}

void websocket_channel::on_keepalive_tick() {
    if (closing_) return;
    const auto silent = std::chrono::steady_clock::now() - last_heard_;
    if (silent >= limits_.ping_timeout) {
        const bool starved = limits_.host && limits_.host->saturated() &&
                             silent < limits_.ping_timeout * starved_timeouts;
        if (!starved) {
            close(websocket::close_code::going_away,
                  "the client sent nothing, not even an answer to a ping, for " +
                      seconds_text(silent) + " (--ws-ping-timeout)");
            // A peer that is gone may never take the close frame, or a ping queued before
            // it: whatever is still pending on the socket ends within the handshake timeout.
            ws_.next_layer().tcp().expires_after(std::chrono::seconds(30));
            return;
        }
    }
    // A ping each interval without a message from the client (its pongs keep it from being
    // judged silent, but do not stop the pings: they are what it answers).
    const bool quiet = !message_since_tick_;
    message_since_tick_ = false;
    if (quiet && !pinging_ && !close_sent_) {
        pinging_ = true;
        ws_.async_ping({}, [this, keep = keep_alive()](beast::error_code ec) {
            pinging_ = false;
            if (ec) log_.debug(name_ + " ping failed: " + ec.message());
            if (close_after_ping_) do_close();
        });
    }
    schedule_keepalive();
}

// ---- reading ---------------------------------------------------------------------------------

void websocket_channel::do_read() {
    ws_.async_read_some(read_buffer_, read_chunk,
                        [this, keep = keep_alive()](beast::error_code ec, std::size_t bytes) {
                            on_read(ec, bytes);
                        });
}

void websocket_channel::on_read(beast::error_code ec, std::size_t bytes) {
    if (ec) {
        if (ec == websocket::error::closed)
            log_.debug(name_ + " closed by the client: " + std::string(ws_.reason().reason));
        else if (ec != asio::error::operation_aborted)
            log_.info(name_ + " connection lost: " + ec.message());
        closing_ = true;
        keepalive_.cancel();
        return;
    }
    last_heard_ = std::chrono::steady_clock::now();
    message_since_tick_ = true;
    message_bytes_ += bytes;
    if (!discarding_ && message_bytes_ > limits_.max_message_bytes) discarding_ = true;
    if (discarding_) read_buffer_.clear();
    if (ws_.is_message_done()) {
        if (discarding_) {
            handler_->on_oversized_message(message_bytes_, limits_.max_message_bytes);
        } else {
            auto data = read_buffer_.data();
            handler_->on_message(
                std::string_view(static_cast<const char*>(data.data()), data.size()),
                ws_.got_binary());
        }
        read_buffer_.clear();
        message_bytes_ = 0;
        discarding_ = false;
    }
    if (!closing_) do_read();
}

// ---- writing ---------------------------------------------------------------------------------

void websocket_channel::send(std::shared_ptr<const kernelproto::websocket_frame> frame) {
    if (closing_) return;
    if (queued_bytes_ + frame->size() > limits_.send_queue_bytes) {
        log_.warn(name_ + " client reads too slowly; closing it");
        return close(websocket::close_code::policy_error,
                     "send queue exceeded " + std::to_string(limits_.send_queue_bytes) + " bytes");
    }
    queued_bytes_ += frame->size();
    queue_.push_back(std::move(frame));
    if (!writing_ && accepted_) do_write();
}

void websocket_channel::do_write() {
    writing_ = true;
    const auto& frame = *queue_.front();
    ws_.binary(frame.binary);
    // A gather write: the frame's pieces go to the socket from where they are (for a kernel's
    // big output, the buffer it was received in). The queue keeps the frame alive meanwhile.
    write_buffers_.clear();
    for (auto piece : frame.pieces()) write_buffers_.emplace_back(piece.data(), piece.size());
    ws_.async_write(write_buffers_,
                    [this, keep = keep_alive()](beast::error_code ec, std::size_t bytes) {
                        on_write(ec, bytes);
                    });
}

void websocket_channel::on_write(beast::error_code ec, std::size_t) {
    writing_ = false;
    if (ec) {
        log_.info(name_ + " connection lost while writing: " + ec.message());
        closing_ = true;
        queue_.clear();
        queued_bytes_ = 0;
        return;
    }
    queued_bytes_ -= queue_.front()->size();
    queue_.pop_front();
    if (closing_ && !(drain_ && !queue_.empty())) return do_close();
    if (!queue_.empty()) do_write();
}

// ---- closing ---------------------------------------------------------------------------------

void websocket_channel::close(websocket::close_code code, std::string reason, bool drain) {
    if (closing_) return;
    closing_ = true;
    drain_ = drain;
    // Every close the gateway starts says why, here and in the close frame (cut to fit).
    log_.info(name_ + " closed by the gateway: " + reason);
    if (reason.size() > max_close_reason) reason.resize(max_close_reason);
    close_reason_ = websocket::close_reason(code, reason);
    // A write in progress finishes first (Beast allows one at a time); then the queue is
    // written (drain) or dropped, and the close frame goes.
    if (!writing_) do_close();
}

void websocket_channel::do_close() {
    if (close_sent_ || !accepted_) return;
    keepalive_.cancel();
    if (pinging_) {  // one control frame at a time: the close follows the ping
        close_after_ping_ = true;
        return;
    }
    close_sent_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    ws_.async_close(close_reason_, [this, keep = keep_alive()](beast::error_code ec) {
        if (ec) log_.debug(name_ + " close: " + ec.message());
    });
}

}  // namespace callisto::gateway
