#include "gateway/jupyter_api/websocket_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "common/byte_size.hpp"
#include "gateway/http/beast.hpp"
#include "gateway/http/websocket_subprotocols.hpp"
#include "gateway/jupyter_api/client_frame_errors.hpp"
#include "gateway/kernels/output/output_cap_notice.hpp"

namespace callisto::gateway::jupyter_api {

namespace asio = boost::asio;
using kernelproto::websocket_format;

websocket_session::websocket_session(client_stream&& stream,
                                     std::shared_ptr<kernels::kernel_session> kernel,
                                     std::string user, const server_config& config, logger log,
                                     url_options from_url, const host_load* host,
                                     connection_limiter::slot slot)
    : channel_(std::move(stream),
               {config.max_message_bytes, config.client_send_queue_bytes, config.ws_ping_interval,
                config.ws_ping_timeout, host},
               log, "websocket", std::move(slot)),
      outbound_(config.client_input_queue_bytes),
      kernel_(std::move(kernel)),
      user_(std::move(user)),
      log_(std::move(log)),
      url_(std::move(from_url)) {}

websocket_session::~websocket_session() { kernel_->detach(this); }

void websocket_session::run(http_request upgrade) {
    std::string subprotocol;
    if (offers_subprotocol(upgrade[http::field::sec_websocket_protocol],
                           kernelproto::v1_subprotocol)) {
        format_ = websocket_format::v1;
        subprotocol = kernelproto::v1_subprotocol;
    }
    channel_.accept(std::move(upgrade), std::move(subprotocol), weak_from_this(), *this);
}

void websocket_session::on_open() { kernel_->attach(shared_from_this(), url_.since); }

void websocket_session::on_message(std::string_view text, bool binary) {
    std::error_code ec;
    auto incoming = kernelproto::from_websocket(text, binary, format_, ec);
    if (ec) {
        return reject(
            "rejected a " + std::string(binary ? "binary" : "text") + " frame: " + ec.message(),
            &incoming.msg);
    }
    if (incoming.ch == kernelproto::channel::iopub)
        return reject("clients cannot send on the iopub channel", &incoming.msg);
    // Bytes on their way to a kernel that is not reading (busy, stopped) wait in the gateway:
    // each connection may have only so many waiting.
    if (!outbound_.admit(text.size()))
        return reject("the kernel is not taking input as fast as this connection sends it: " +
                          kernels::human_bytes(outbound_.held_bytes()) +
                          " already wait for it (--client-input-queue); this message was discarded",
                      &incoming.msg);
    incoming.msg.lease = outbound_.lease(text.size());
    kernel_->submit(weak_from_this(), incoming.ch, std::move(incoming.msg));
}

void websocket_session::on_oversized_message(std::size_t bytes, std::size_t limit) {
    reject("message of " + std::to_string(bytes) + " bytes is larger than the limit of " +
               describe_bytes(limit) + " set by --max-message-size; it was discarded",
           nullptr);
}

void websocket_session::reject(std::string_view reason, const kernelproto::message* rejected) {
    log_.info("websocket client: " + std::string(reason));
    auto error = protocol_error_message(reason, rejected);
    channel_.send(std::make_shared<const kernelproto::websocket_frame>(
        kernelproto::to_websocket(error, kernelproto::channel::iopub, format_)));
}

// ---- from the kernel and the server: any thread ----------------------------------------------

void websocket_session::deliver(std::shared_ptr<const kernelproto::websocket_frame> frame) {
    asio::dispatch(channel_.get_executor(),
                   [self = shared_from_this(), f = std::move(frame)]() mutable {
                       self->channel_.send(std::move(f));
                   });
}

void websocket_session::close(std::string reason) {
    asio::dispatch(channel_.get_executor(), [self = shared_from_this(), r = std::move(reason)] {
        self->channel_.close(websocket::close_code::going_away, r);
    });
}

void websocket_session::close_from_kernel(std::string reason) {
    asio::dispatch(channel_.get_executor(), [self = shared_from_this(), r = std::move(reason)] {
        self->channel_.close(websocket::close_code::normal, r);
    });
}

}  // namespace callisto::gateway::jupyter_api
