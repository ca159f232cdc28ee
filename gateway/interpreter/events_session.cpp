#include "gateway/interpreter/events_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>

namespace callisto::gateway::interpreter {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

namespace {

constexpr std::size_t read_chunk = 256 * 1024;

std::string text_of(const nlohmann::json& message) {
    return message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

events_session::events_session(beast::tcp_stream&& stream,
                               std::shared_ptr<interpreter_context> context,
                               const interpreter_settings& settings, const server_config& config,
                               logger log)
    : ws_(std::move(stream)),
      context_(std::move(context)),
      settings_(settings),
      config_(config),
      log_(std::move(log)) {}

void events_session::run(http_request upgrade) {
    beast::get_lowest_layer(ws_).expires_never();
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);
    timeouts.idle_timeout = config_.ws_ping_interval;  // ping when idle, close after another
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
    ws_.read_message_max(0);  // enforced per message in on_read, without dropping the socket
    ws_.auto_fragment(false);
    ws_.text(true);
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "callisto"); }));
    ws_.async_accept(upgrade,
                     beast::bind_front_handler(&events_session::on_accept, shared_from_this()));
}

void events_session::on_accept(beast::error_code ec) {
    if (ec) {
        log_.debug("events websocket accept failed: " + ec.message());
        return;
    }
    accepted_ = true;
    if (!queue_.empty() && !writing_) do_write();
    do_read();
}

// ---- reading ---------------------------------------------------------------------------------

void events_session::do_read() {
    ws_.async_read_some(read_buffer_, read_chunk,
                        beast::bind_front_handler(&events_session::on_read, shared_from_this()));
}

void events_session::on_read(beast::error_code ec, std::size_t bytes) {
    if (ec) {
        if (ec != websocket::error::closed && ec != asio::error::operation_aborted)
            log_.debug("events websocket read ended: " + ec.message());
        closing_ = true;
        return;
    }
    message_bytes_ += bytes;
    if (!discarding_ && message_bytes_ > settings_.max_socket_message_bytes) discarding_ = true;
    if (discarding_) read_buffer_.clear();
    if (ws_.is_message_done()) {
        if (discarding_) {
            refuse("message of " + std::to_string(message_bytes_) + " bytes is larger than the limit of " +
                       std::to_string(settings_.max_socket_message_bytes) + " bytes; it was discarded",
                   "");
        } else if (!ws_.got_text()) {
            refuse("messages are JSON text frames; a binary frame was discarded", "");
        } else {
            auto data = read_buffer_.data();
            handle_message(std::string_view(static_cast<const char*>(data.data()), data.size()));
        }
        read_buffer_.clear();
        message_bytes_ = 0;
        discarding_ = false;
    }
    if (!closing_) do_read();
}

void events_session::handle_message(std::string_view text) {
    std::string error, request_id;
    auto cmd = parse_events_command(text, settings_.request_limits, error, request_id);
    if (!cmd) return refuse(std::move(error), request_id);
    switch (cmd->type) {
        case events_command::kind::execute: return execute(std::move(*cmd));
        case events_command::kind::follow: return follow(std::move(*cmd));
        case events_command::kind::interrupt: return interrupt(std::move(*cmd));
    }
}

void events_session::refuse(std::string message, const std::string& request_id) {
    log_.debug("events websocket client: " + message);
    nlohmann::json m = {{"type", "error"}, {"message", std::move(message)}};
    if (!request_id.empty()) m["request_id"] = request_id;
    send(std::move(m));
}

void events_session::execute(events_command cmd) {
    cmd.request.stream = true;
    context_->submit(std::move(cmd.request), [self = shared_from_this(), request_id = cmd.request_id,
                                              limit = settings_.queue_limit](
                                                 interpreter_context::submit_result r) {
        if (r.outcome == interpreter_context::submit_outcome::queue_full)
            return self->refuse("this context already has " + std::to_string(limit) +
                                    " executions waiting; try again when one has finished",
                                request_id);
        if (!r.exec) return self->refuse("the context is closed", request_id);
        nlohmann::json queued = {{"type", "queued"},
                                 {"id", r.exec->id()},
                                 {"execution_id", r.exec->id()},
                                 {"repeated", r.outcome == interpreter_context::submit_outcome::repeated}};
        if (!request_id.empty()) queued["request_id"] = request_id;
        // On the context's strand, before the execution's first event: nothing is missed,
        // and "queued" is posted before any event.
        self->send(std::move(queued));
        self->watch(r.exec, false);
    });
}

void events_session::follow(events_command cmd) {
    context_->find(cmd.execution_id, [self = shared_from_this(), cmd](std::shared_ptr<execution> e) {
        if (!e) return self->refuse("no execution " + cmd.execution_id + " in this context", cmd.request_id);
        nlohmann::json m = {{"type", "following"}, {"execution_id", e->id()}};
        if (!cmd.request_id.empty()) m["request_id"] = cmd.request_id;
        self->send(std::move(m));
        self->watch(e, true);
    });
}

void events_session::interrupt(events_command cmd) {
    context_->interrupt(cmd.execution_id, [self = shared_from_this(), cmd](std::shared_ptr<execution> e) {
        if (!e) return self->refuse("no execution " + cmd.execution_id + " in this context", cmd.request_id);
        // Its "end" event follows on the sockets that watch it.
        nlohmann::json m = {{"type", "interrupting"},
                            {"execution_id", e->id()},
                            {"status", to_string(e->status())}};
        if (!cmd.request_id.empty()) m["request_id"] = cmd.request_id;
        self->send(std::move(m));
    });
}

void events_session::watch(const std::shared_ptr<execution>& e, bool from_start) {
    // Weak: a socket that went away does not stay alive until the execution ends.
    e->subscribe(
        [weak = weak_from_this(), id = e->id()](const nlohmann::json& event, bool) {
            auto self = weak.lock();
            if (!self) return;
            nlohmann::json tagged = event;
            tagged["execution_id"] = id;
            self->send(std::move(tagged));
        },
        from_start);
}

// ---- writing ---------------------------------------------------------------------------------

void events_session::send(nlohmann::json message) {
    // Serialised on the caller's thread (the execution's sinks run under its lock, so the
    // text is taken once), then posted: post keeps the order of sends from one strand.
    asio::post(ws_.get_executor(), [self = shared_from_this(), text = text_of(message)]() mutable {
        self->enqueue(std::move(text));
    });
}

void events_session::enqueue(std::string text) {
    if (closing_) return;
    if (queued_bytes_ + text.size() > config_.client_send_queue_bytes) {
        log_.warn("events client reads too slowly; closing its WebSocket");
        return start_close(websocket::close_code::policy_error,
                           "send queue exceeded " + std::to_string(config_.client_send_queue_bytes) +
                               " bytes");
    }
    queued_bytes_ += text.size();
    queue_.push_back(std::move(text));
    if (!writing_ && accepted_) do_write();
}

void events_session::do_write() {
    writing_ = true;
    ws_.async_write(asio::buffer(queue_.front()),
                    beast::bind_front_handler(&events_session::on_write, shared_from_this()));
}

void events_session::on_write(beast::error_code ec, std::size_t) {
    writing_ = false;
    if (ec) {
        log_.debug("events websocket write failed: " + ec.message());
        closing_ = true;
        queue_.clear();
        queued_bytes_ = 0;
        return;
    }
    queued_bytes_ -= queue_.front().size();
    queue_.pop_front();
    if (closing_) return do_close();
    if (!queue_.empty()) do_write();
}

// ---- closing ---------------------------------------------------------------------------------

void events_session::close() {
    asio::dispatch(ws_.get_executor(), [self = shared_from_this()] {
        self->start_close(websocket::close_code::going_away, "server shutting down");
    });
}

void events_session::start_close(websocket::close_code code, std::string reason) {
    if (closing_) return;
    closing_ = true;
    if (reason.size() > 120) reason.resize(120);  // a close reason fits a control frame
    close_reason_ = websocket::close_reason(code, reason);
    // A write in progress finishes first (Beast allows one at a time); the rest is dropped.
    if (!writing_) do_close();
}

void events_session::do_close() {
    if (close_sent_ || !accepted_) return;
    close_sent_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code ec) {
        if (ec) self->log_.debug("events websocket close: " + ec.message());
    });
}

}  // namespace callisto::gateway::interpreter
