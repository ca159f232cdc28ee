#include "gateway/http/websocket_channel.hpp"
#include "gateway/http/beast.hpp"

#include <boost/beast/http/field.hpp>

#include "gateway/http/websocket_subprotocols.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;

namespace {

constexpr std::size_t read_chunk = 256 * 1024;
constexpr std::size_t max_close_reason = 120;  // a close frame carries at most 123 bytes

}  // namespace

websocket_channel::websocket_channel(client_stream&& stream, limits socket_limits, logger log,
                                     std::string name, connection_limiter::slot slot)
    : ws_(std::move(stream)),
      slot_(std::move(slot)),
      limits_(socket_limits),
      log_(std::move(log)),
      name_(std::move(name)) {}

void websocket_channel::accept(http_request upgrade, std::string subprotocol,
                               std::weak_ptr<void> owner, websocket_handler& handler) {
    owner_ = std::move(owner);
    handler_ = &handler;
    ws_.next_layer().tcp().expires_never();  // the WebSocket keeps its own timeouts
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);
    timeouts.idle_timeout = limits_.ping_interval;  // ping when idle, close after another
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
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
    do_read();
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
        if (ec != websocket::error::closed && ec != asio::error::operation_aborted)
            log_.debug(name_ + " read ended: " + ec.message());
        closing_ = true;
        return;
    }
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
        log_.debug(name_ + " write failed: " + ec.message());
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
    if (reason.size() > max_close_reason) reason.resize(max_close_reason);
    close_reason_ = websocket::close_reason(code, reason);
    // A write in progress finishes first (Beast allows one at a time); then the queue is
    // written (drain) or dropped, and the close frame goes.
    if (!writing_) do_close();
}

void websocket_channel::do_close() {
    if (close_sent_ || !accepted_) return;
    close_sent_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    ws_.async_close(close_reason_, [this, keep = keep_alive()](beast::error_code ec) {
        if (ec) log_.debug(name_ + " close: " + ec.message());
    });
}

}  // namespace callisto::gateway
