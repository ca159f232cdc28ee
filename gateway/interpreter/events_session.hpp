#pragma once
// The events WebSocket of a context (GET /v1/contexts/{id}/events): JSON text messages in
// both directions. The client submits, follows and interrupts executions; the socket sends
// each execution's events as the NDJSON stream does (queued, start, stdout, stderr, result,
// error, end), tagged with "execution_id". Bad messages are answered with
// {"type": "error", "message"} and the socket stays open.
//
// It subscribes to executions exactly as the NDJSON stream does (execution::subscribe); the
// sinks only post here. Reads in pieces so an oversized message is discarded, writes from a
// queue bounded in bytes, and pings an idle client, like the kernel WebSocket.

#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>

#include "common/logger.hpp"
#include "gateway/api_request.hpp"
#include "gateway/interpreter/events_message.hpp"
#include "gateway/interpreter/interpreter_context.hpp"
#include "gateway/server_config.hpp"

namespace callisto::gateway::interpreter {

class events_session : public std::enable_shared_from_this<events_session> {
public:
    events_session(boost::beast::tcp_stream&& stream, std::shared_ptr<interpreter_context> context,
                   const interpreter_settings& settings, const server_config& config, logger log);

    void run(http_request upgrade);
    void close();  // server shutdown; thread-safe

private:
    void on_accept(boost::beast::error_code ec);
    void do_read();
    void on_read(boost::beast::error_code ec, std::size_t bytes);
    void handle_message(std::string_view text);
    void execute(events_command cmd);
    void follow(events_command cmd);
    void interrupt(events_command cmd);
    void watch(const std::shared_ptr<execution>& e, bool from_start);
    void refuse(std::string message, const std::string& request_id);

    // From any thread; posted, so messages leave in the order they were sent.
    void send(nlohmann::json message);
    void enqueue(std::string text);
    void do_write();
    void on_write(boost::beast::error_code ec, std::size_t bytes);
    void start_close(boost::beast::websocket::close_code code, std::string reason);
    void do_close();

    boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
    const std::shared_ptr<interpreter_context> context_;
    const interpreter_settings& settings_;
    const server_config& config_;
    logger log_;

    boost::beast::flat_buffer read_buffer_;
    std::size_t message_bytes_ = 0;
    bool discarding_ = false;

    std::deque<std::string> queue_;
    std::size_t queued_bytes_ = 0;
    bool writing_ = false;
    bool accepted_ = false;
    bool closing_ = false;
    bool close_sent_ = false;
    boost::beast::websocket::close_reason close_reason_;
};

}  // namespace callisto::gateway::interpreter
