#include "gateway/websocket_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "gateway/client_frame_errors.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using kernelproto::websocket_format;

namespace {

constexpr std::size_t read_chunk = 256 * 1024;

bool offers_v1(std::string_view header) {
    while (!header.empty()) {
        auto comma = header.find(',');
        auto token = header.substr(0, comma);
        while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
        while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
        if (token == kernelproto::v1_subprotocol) return true;
        if (comma == std::string_view::npos) break;
        header.remove_prefix(comma + 1);
    }
    return false;
}

}  // namespace

websocket_session::websocket_session(beast::tcp_stream&& stream,
                                     std::shared_ptr<kernel_session> kernel,
                                     const server_config& config, logger log,
                                     std::optional<std::uint64_t> since)
    : ws_(std::move(stream)),
      kernel_(std::move(kernel)),
      config_(config),
      log_(std::move(log)),
      since_(since) {}

websocket_session::~websocket_session() { kernel_->detach(this); }

void websocket_session::run(http_request upgrade) {
    if (offers_v1(upgrade[http::field::sec_websocket_protocol])) format_ = websocket_format::v1;
    beast::get_lowest_layer(ws_).expires_never();

    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);
    timeouts.idle_timeout = config_.ws_ping_interval;  // ping when idle, close after another
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
    ws_.read_message_max(0);  // enforced here, per message, without dropping the connection
    ws_.auto_fragment(false);
    const bool v1 = format_ == websocket_format::v1;
    ws_.set_option(websocket::stream_base::decorator([v1](websocket::response_type& res) {
        res.set(http::field::server, "callisto");
        if (v1) res.set(http::field::sec_websocket_protocol, kernelproto::v1_subprotocol);
    }));
    ws_.async_accept(upgrade, beast::bind_front_handler(&websocket_session::on_accept,
                                                        shared_from_this()));
}

void websocket_session::on_accept(beast::error_code ec) {
    if (ec) {
        log_.debug("websocket accept failed: " + ec.message());
        return;
    }
    accepted_ = true;
    kernel_->attach(shared_from_this(), since_);
    do_read();
}

// ---- reading ---------------------------------------------------------------------------------

void websocket_session::do_read() {
    ws_.async_read_some(read_buffer_, read_chunk,
                        beast::bind_front_handler(&websocket_session::on_read, shared_from_this()));
}

void websocket_session::on_read(beast::error_code ec, std::size_t bytes) {
    if (ec) {
        if (ec != websocket::error::closed && ec != asio::error::operation_aborted)
            log_.debug("websocket read ended: " + ec.message());
        closing_ = true;
        return;
    }
    message_bytes_ += bytes;
    if (!discarding_ && message_bytes_ > config_.max_message_bytes) discarding_ = true;
    if (discarding_) read_buffer_.clear();

    if (ws_.is_message_done()) {
        if (discarding_) {
            reject("message of " + std::to_string(message_bytes_) +
                       " bytes is larger than the limit of " +
                       std::to_string(config_.max_message_bytes) + " bytes; it was discarded",
                   nullptr);
        } else {
            handle_message(ws_.got_binary());
        }
        read_buffer_.clear();
        message_bytes_ = 0;
        discarding_ = false;
    }
    if (!closing_) do_read();
}

void websocket_session::handle_message(bool binary) {
    auto data = read_buffer_.data();
    std::string_view text(static_cast<const char*>(data.data()), data.size());
    std::error_code ec;
    auto incoming = kernelproto::from_websocket(text, binary, format_, ec);
    if (ec) {
        return reject("rejected a " + std::string(binary ? "binary" : "text") + " frame: " +
                          ec.message(),
                      &incoming.msg);
    }
    if (incoming.ch == kernelproto::channel::iopub)
        return reject("clients cannot send on the iopub channel", &incoming.msg);
    kernel_->submit(weak_from_this(), incoming.ch, std::move(incoming.msg));
}

void websocket_session::reject(std::string_view reason, const kernelproto::message* rejected) {
    log_.info("websocket client: " + std::string(reason));
    auto error = protocol_error_message(reason, rejected);
    enqueue(std::make_shared<const kernelproto::websocket_frame>(
        kernelproto::to_websocket(error, kernelproto::channel::iopub, format_)));
}

// ---- writing ---------------------------------------------------------------------------------

void websocket_session::deliver(std::shared_ptr<const kernelproto::websocket_frame> frame) {
    asio::dispatch(ws_.get_executor(), [self = shared_from_this(), f = std::move(frame)]() mutable {
        self->enqueue(std::move(f));
    });
}

void websocket_session::enqueue(std::shared_ptr<const kernelproto::websocket_frame> frame) {
    if (closing_) return;
    if (queued_bytes_ + frame->size() > config_.client_send_queue_bytes) {
        log_.warn("client reads too slowly; closing its WebSocket");
        return start_close(websocket::close_code::policy_error,
                           "send queue exceeded " +
                               std::to_string(config_.client_send_queue_bytes) + " bytes");
    }
    queued_bytes_ += frame->size();
    queue_.push_back(std::move(frame));
    if (!writing_ && accepted_) do_write();
}

void websocket_session::do_write() {
    writing_ = true;
    const auto& frame = *queue_.front();
    ws_.binary(frame.binary);
    // A gather write: the frame's pieces go to the socket from where they are (for a kernel's
    // big output, the buffer it was received in). The queue keeps the frame alive meanwhile.
    write_buffers_.clear();
    for (auto piece : frame.pieces()) write_buffers_.emplace_back(piece.data(), piece.size());
    ws_.async_write(write_buffers_,
                    beast::bind_front_handler(&websocket_session::on_write, shared_from_this()));
}

void websocket_session::on_write(beast::error_code ec, std::size_t) {
    writing_ = false;
    if (ec) {
        log_.debug("websocket write failed: " + ec.message());
        closing_ = true;
        queue_.clear();
        queued_bytes_ = 0;
        return;
    }
    queued_bytes_ -= queue_.front()->size();
    queue_.pop_front();
    if (closing_) return do_close();
    if (!queue_.empty()) do_write();
}

// ---- closing ---------------------------------------------------------------------------------

void websocket_session::close(std::string reason) {
    asio::dispatch(ws_.get_executor(), [self = shared_from_this(), r = std::move(reason)] {
        self->start_close(websocket::close_code::going_away, r);
    });
}

void websocket_session::close_from_kernel(std::string reason) {
    asio::dispatch(ws_.get_executor(), [self = shared_from_this(), r = std::move(reason)] {
        self->start_close(websocket::close_code::normal, r);
    });
}

void websocket_session::start_close(websocket::close_code code, std::string reason) {
    if (closing_) return;
    closing_ = true;
    // A close reason must fit a control frame (123 bytes).
    if (reason.size() > 120) reason.resize(120);
    close_reason_ = websocket::close_reason(code, reason);
    // A write in progress finishes first (Beast allows one at a time); the rest is dropped.
    if (!writing_) do_close();
}

void websocket_session::do_close() {
    if (close_sent_ || !accepted_) return;
    close_sent_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code ec) {
        if (ec) self->log_.debug("websocket close: " + ec.message());
    });
}

}  // namespace callisto::gateway
