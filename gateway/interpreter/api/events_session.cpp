#include "gateway/interpreter/api/events_session.hpp"

#include "common/byte_size.hpp"
#include "gateway/http/beast.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

namespace callisto::gateway::interpreter {

namespace asio = boost::asio;

namespace {

std::string text_of(const nlohmann::json& message) {
    return message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `message`, with the id the client gave its request when it gave one: the answer to it.
nlohmann::json answering(nlohmann::json message, const std::string& request_id) {
    if (!request_id.empty()) message["request_id"] = request_id;
    return message;
}

std::string no_such_execution(const events_command& cmd) {
    return "no execution " + cmd.execution_id + " in this context";
}

}  // namespace

events_session::events_session(client_stream&& stream, std::shared_ptr<interpreter_context> context,
                               const interpreter_settings& settings, const server_config& config,
                               logger log, const host_load* host, connection_limiter::slot slot)
    : channel_(std::move(stream),
               {settings.max_socket_message_bytes, config.client_send_queue_bytes,
                config.ws_ping_interval, config.ws_ping_timeout, host},
               log, "events websocket", std::move(slot)),
      context_(std::move(context)),
      settings_(settings),
      log_(std::move(log)) {}

void events_session::run(http_request upgrade) {
    // Told after the context's executions have ended: their "end" events are queued here
    // first, and the close waits for them.
    close_watcher_ = std::make_shared<const interpreter_context::close_watcher>(
        [weak = weak_from_this()](const std::string& reason) {
            auto self = weak.lock();
            if (!self) return;
            asio::post(self->channel_.get_executor(), [self, reason] {
                self->channel_.close(websocket::close_code::normal, reason, true);
            });
        });
    context_->watch_close(close_watcher_);
    channel_.accept(std::move(upgrade), "", weak_from_this(), *this);
}

void events_session::on_message(std::string_view text, bool binary) {
    if (binary) return refuse("messages are JSON text frames; a binary frame was discarded", "");
    std::string error, request_id;
    auto cmd = parse_events_command(text, settings_.request_limits, error, request_id);
    if (!cmd) return refuse(std::move(error), request_id);
    switch (cmd->type) {
        case events_command::kind::execute: return execute(std::move(*cmd));
        case events_command::kind::follow: return follow(std::move(*cmd));
        case events_command::kind::interrupt: return interrupt(std::move(*cmd));
    }
}

void events_session::on_oversized_message(std::size_t bytes, std::size_t limit) {
    refuse("message of " + std::to_string(bytes) + " bytes is larger than the fixed limit of " +
               describe_bytes(limit) + " (room for 'code' and 'env'); it was discarded",
           "");
}

void events_session::refuse(std::string message, const std::string& request_id) {
    log_.debug("events websocket client: " + message);
    send(answering({{"type", "error"}, {"message", std::move(message)}}, request_id));
}

void events_session::execute(events_command cmd) {
    cmd.request.stream = true;
    context_->submit(
        std::move(cmd.request),
        [self = shared_from_this(), request_id = cmd.request_id,
         limit = settings_.queue_limit](interpreter_context::submit_result r) {
            if (r.outcome == interpreter_context::submit_outcome::queue_full)
                return self->refuse("this context already has " + std::to_string(limit) +
                                        " executions waiting; try again when one has finished",
                                    request_id);
            if (r.outcome == interpreter_context::submit_outcome::refused)
                return self->refuse(r.why, request_id);
            if (!r.exec) return self->refuse("the context is closed", request_id);
            // On the context's strand, before the execution's first event: nothing is missed,
            // and "queued" is posted before any event.
            self->send(answering(
                {{"type", "queued"},
                 {"id", r.exec->id()},
                 {"execution_id", r.exec->id()},
                 {"repeated", r.outcome == interpreter_context::submit_outcome::repeated}},
                request_id));
            self->watch(r.exec, false);
        });
}

void events_session::follow(events_command cmd) {
    context_->find(cmd.execution_id, [self = shared_from_this(),
                                      cmd](std::shared_ptr<execution> e) {
        if (!e) return self->refuse(no_such_execution(cmd), cmd.request_id);
        self->send(answering({{"type", "following"}, {"execution_id", e->id()}}, cmd.request_id));
        self->watch(e, true);
    });
}

void events_session::interrupt(events_command cmd) {
    context_->interrupt(cmd.execution_id,
                        [self = shared_from_this(), cmd](std::shared_ptr<execution> e) {
                            if (!e) return self->refuse(no_such_execution(cmd), cmd.request_id);
                            // Its "end" event follows on the sockets that watch it.
                            self->send(answering({{"type", "interrupting"},
                                                  {"execution_id", e->id()},
                                                  {"status", to_string(e->status())}},
                                                 cmd.request_id));
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

// ---- towards the client: any thread ----------------------------------------------------------

void events_session::send(nlohmann::json message) {
    // Serialised on the caller's thread (the execution's sinks run under its lock, so the
    // text is taken once), then posted: post keeps the order of sends from one strand.
    auto frame = std::make_shared<const kernelproto::websocket_frame>(text_of(message));
    asio::post(channel_.get_executor(),
               [self = shared_from_this(), f = std::move(frame)]() mutable {
                   self->channel_.send(std::move(f));
               });
}

void events_session::close() {
    asio::dispatch(channel_.get_executor(), [self = shared_from_this()] {
        self->channel_.close(websocket::close_code::going_away, "server shutting down");
    });
}

}  // namespace callisto::gateway::interpreter
