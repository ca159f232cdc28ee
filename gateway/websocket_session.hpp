#pragma once
// One client WebSocket on /api/kernels/{id}/channels.
//
// Reads frames in pieces so an oversized message is discarded and answered with an error
// instead of tearing the connection down; writes from a queue bounded in bytes (a client that
// reads too slowly is closed with a reason rather than growing the gateway's memory).

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "common/logger.hpp"
#include "gateway/api_request.hpp"
#include "gateway/kernel_client.hpp"
#include "gateway/kernel_session.hpp"
#include "gateway/server_config.hpp"

namespace callisto::gateway {

class websocket_session : public kernel_client,
                          public std::enable_shared_from_this<websocket_session> {
public:
    // `since`: replay the kernel's output after this sequence number first (?since=SEQ).
    websocket_session(boost::beast::tcp_stream&& stream, std::shared_ptr<kernel_session> kernel,
                      const server_config& config, logger log,
                      std::optional<std::uint64_t> since = std::nullopt);
    ~websocket_session() override;

    // Accepts the upgrade (choosing the v1 subprotocol when offered) and starts relaying.
    void run(http_request upgrade);

    // Server shutdown: close with 1001 and this reason. Thread-safe.
    void close(std::string reason = "server shutting down");

    kernelproto::websocket_format format() const override { return format_; }
    void deliver(std::shared_ptr<const kernelproto::websocket_frame> frame) override;
    void close_from_kernel(std::string reason) override;

private:
    void on_accept(boost::beast::error_code ec);
    void do_read();
    void on_read(boost::beast::error_code ec, std::size_t bytes);
    void handle_message(bool binary);
    void reject(std::string_view reason, const kernelproto::message* rejected);
    void enqueue(std::shared_ptr<const kernelproto::websocket_frame> frame);
    void do_write();
    void on_write(boost::beast::error_code ec, std::size_t bytes);
    void start_close(boost::beast::websocket::close_code code, std::string reason);
    void do_close();

    boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
    std::shared_ptr<kernel_session> kernel_;
    const server_config& config_;
    logger log_;
    kernelproto::websocket_format format_ = kernelproto::websocket_format::legacy;
    std::optional<std::uint64_t> since_;

    boost::beast::flat_buffer read_buffer_;
    std::size_t message_bytes_ = 0;
    bool discarding_ = false;

    std::deque<std::shared_ptr<const kernelproto::websocket_frame>> queue_;
    std::size_t queued_bytes_ = 0;
    std::vector<boost::asio::const_buffer> write_buffers_;  // the frame being written
    bool writing_ = false;
    bool accepted_ = false;
    bool closing_ = false;
    bool close_sent_ = false;
    boost::beast::websocket::close_reason close_reason_;
};

}  // namespace callisto::gateway
