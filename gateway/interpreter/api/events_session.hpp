#pragma once
// The events WebSocket of a context (GET /v1/contexts/{id}/events): JSON text messages in
// both directions. The client submits, follows and interrupts executions; the socket sends
// each execution's events as the NDJSON stream does (queued, start, stdout, stderr, result,
// error, end), tagged with "execution_id". Bad messages are answered with
// {"type": "error", "message"} and the socket stays open.
//
// It subscribes to executions exactly as the NDJSON stream does (execution::subscribe); the
// sinks only post here. The socket mechanics (size limit, bounded send queue, pings, close) are
// the channel's, as for the kernel WebSocket. When the context closes (deleted, culled, its
// kernel gone), the socket closes too, after the events already on their way, with the reason.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/logger.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/http/websocket_channel.hpp"
#include "gateway/interpreter/api/events_message.hpp"
#include "gateway/interpreter/interpreter_context.hpp"
#include "gateway/server_config.hpp"

namespace callisto::gateway::interpreter {

class events_session : public websocket_handler,
                       public std::enable_shared_from_this<events_session> {
public:
    events_session(client_stream&& stream, std::shared_ptr<interpreter_context> context,
                   const interpreter_settings& settings, const server_config& config, logger log,
                   const host_load* host, connection_limiter::slot slot = {});

    void run(http_request upgrade);
    void close();  // server shutdown; thread-safe

private:
    void on_open() override {}
    void on_message(std::string_view data, bool binary) override;
    void on_oversized_message(std::size_t bytes, std::size_t limit) override;
    void execute(events_command cmd);
    void follow(events_command cmd);
    void interrupt(events_command cmd);
    void watch(const std::shared_ptr<execution>& e, bool from_start);
    void refuse(std::string message, const std::string& request_id);

    // From any thread; posted, so messages leave in the order they were sent.
    void send(nlohmann::json message);

    websocket_channel channel_;
    const std::shared_ptr<interpreter_context> context_;
    std::shared_ptr<const interpreter_context::close_watcher> close_watcher_;
    const interpreter_settings& settings_;
    logger log_;
};

}  // namespace callisto::gateway::interpreter
