#pragma once
// One client WebSocket on /api/kernels/{id}/channels: Jupyter messages in both directions, in
// the format the client's subprotocol chose. The socket mechanics (size limit, bounded send
// queue, pings, close) are the channel's; this relays between it and the kernel session.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/logger.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/http/websocket_channel.hpp"
#include "gateway/kernels/output/message_budget.hpp"
#include "gateway/kernels/session/kernel_client.hpp"
#include "gateway/kernels/session/kernel_session.hpp"
#include "gateway/server_config.hpp"

namespace callisto::gateway::jupyter_api {

class websocket_session : public kernels::kernel_client,
                          public websocket_handler,
                          public std::enable_shared_from_this<websocket_session> {
public:
    // What the client's URL asked for: replay the kernel's output after this sequence number
    // first (?since=SEQ); the Jupyter session it belongs to (?session_id=).
    struct url_options {
        std::optional<std::uint64_t> since;
        std::string session_id;
    };

    // `user`: who attached (the audit log names them).
    websocket_session(client_stream&& stream, std::shared_ptr<kernels::kernel_session> kernel,
                      std::string user, const server_config& config, logger log,
                      url_options from_url, const host_load* host,
                      connection_limiter::slot slot = {});
    ~websocket_session() override;

    // Accepts the upgrade (choosing the v1 subprotocol when offered) and starts relaying.
    void run(http_request upgrade);

    // Server shutdown: close with 1001 and this reason. Thread-safe.
    void close(std::string reason = "server shutting down");

    kernelproto::websocket_format format() const override { return format_; }
    void deliver(std::shared_ptr<const kernelproto::websocket_frame> frame) override;
    void close_from_kernel(std::string reason) override;
    std::string user_name() const override { return user_; }
    std::string jupyter_session() const override { return url_.session_id; }

private:
    void on_open() override;
    void on_message(std::string_view data, bool binary) override;
    void on_oversized_message(std::size_t bytes, std::size_t limit) override;
    void reject(std::string_view reason, const kernelproto::message* rejected);

    websocket_channel channel_;
    kernels::message_budget outbound_;  // this client's messages not yet handed to ZeroMQ
    std::shared_ptr<kernels::kernel_session> kernel_;
    const std::string user_;
    logger log_;
    kernelproto::websocket_format format_ = kernelproto::websocket_format::legacy;
    const url_options url_;
};

}  // namespace callisto::gateway::jupyter_api
