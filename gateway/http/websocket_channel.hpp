#pragma once
// The mechanics every WebSocket the gateway serves shares, so that each session keeps only its
// own messages:
// - the accept, with keepalive pings: a ping each interval the client sent nothing, the
//   connection closed, with its reason in the log, once it has been silent for the ping
//   timeout; not while the host is past its capacity (a starved client may not get to answer
//   in time, and dropping it would lose its executions' replies), up to ten times that;
// - a read in pieces, so a message over the size limit is discarded and reported to the session
//   (which answers it) instead of tearing the connection down;
// - one write at a time from a queue bounded in bytes: a client that reads too slowly is closed
//   with a reason rather than growing the gateway's memory;
// - an orderly close that lets a write in progress finish.
//
// A channel is a member of its session. Every asynchronous step holds the session alive through
// the owner given to accept(), and the session's handler is called on the socket's executor. All
// calls must be made on that executor: sessions dispatch or post to it from other threads.

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "common/host_load.hpp"
#include "common/logger.hpp"
#include "gateway/http/client_stream.hpp"
#include "gateway/http/connection_limiter.hpp"
#include "gateway/http/http_message.hpp"
#include "kernelproto/websocket_frame.hpp"

namespace callisto::gateway {

// What a session does with its channel's events; called on the channel's executor.
class websocket_handler {
public:
    virtual void on_open() = 0;
    virtual void on_message(std::string_view data, bool binary) = 0;
    // A message of `bytes` went over the limit and was discarded; the connection stays open.
    virtual void on_oversized_message(std::size_t bytes, std::size_t limit) = 0;

    virtual ~websocket_handler() = default;
};

class websocket_channel {
public:
    struct limits {
        std::size_t max_message_bytes;  // one message from the client
        std::size_t send_queue_bytes;   // queued towards the client, before it is closed
        std::chrono::seconds ping_interval;
        std::chrono::seconds ping_timeout;  // silent this long: closed
        const host_load* host = nullptr;    // saturated: the timeout is stretched
    };

    using executor_type = client_stream::executor_type;

    // `name` prefixes the log lines ("websocket", "events websocket"). `slot` is the
    // connection's place under the connection limits, held until the channel goes.
    websocket_channel(client_stream&& stream, limits socket_limits, logger log, std::string name,
                      connection_limiter::slot slot = {});

    executor_type get_executor() { return ws_.get_executor(); }

    // Answers the upgrade (naming `subprotocol` when not empty) and starts reading. `owner` is
    // the session, kept alive by every operation in flight; `handler` lives as long as it.
    void accept(http_request upgrade, std::string subprotocol, std::weak_ptr<void> owner,
                websocket_handler& handler);

    // Queues a frame; frames sent before the accept completes leave once it has.
    void send(std::shared_ptr<const kernelproto::websocket_frame> frame);
    // Closes after the write in progress; queued frames are dropped, or with `drain` written
    // first. Nothing sent afterwards is queued. The reason is cut to fit a control frame.
    void close(boost::beast::websocket::close_code code, std::string reason, bool drain = false);

private:
    void on_accept(boost::beast::error_code ec);
    void do_read();
    void on_read(boost::beast::error_code ec, std::size_t bytes);
    void do_write();
    void on_write(boost::beast::error_code ec, std::size_t bytes);
    void do_close();
    void schedule_keepalive();
    void on_keepalive_tick();
    std::shared_ptr<void> keep_alive() const { return owner_.lock(); }

    boost::beast::websocket::stream<client_stream> ws_;
    connection_limiter::slot slot_;
    const limits limits_;
    logger log_;
    const std::string name_;
    std::weak_ptr<void> owner_;
    websocket_handler* handler_ = nullptr;

    boost::beast::flat_buffer read_buffer_;
    std::size_t message_bytes_ = 0;
    bool discarding_ = false;

    std::deque<std::shared_ptr<const kernelproto::websocket_frame>> queue_;
    std::size_t queued_bytes_ = 0;
    std::vector<boost::asio::const_buffer> write_buffers_;  // the frame being written
    bool writing_ = false;
    bool accepted_ = false;
    bool closing_ = false;
    bool drain_ = false;  // closing after the queue is written
    bool close_sent_ = false;
    boost::beast::websocket::close_reason close_reason_;

    // Keepalive: Beast allows one ping, pong or close in flight; a close waits for the ping.
    boost::asio::steady_timer keepalive_;
    std::chrono::steady_clock::time_point last_heard_;  // any frame, pongs too
    bool message_since_tick_ = false;
    bool pinging_ = false;
    bool close_after_ping_ = false;
};

}  // namespace callisto::gateway
