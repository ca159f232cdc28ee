#pragma once
// A connection to the gateway, plain TCP or TLS, as one type, so the HTTP requests and the
// WebSockets are written once for http:// and https:// (the gateway's client_stream does the
// same on the server side). It is an Asio AsyncStream; Beast's WebSocket finds its teardown
// below by argument-dependent lookup. Timeouts and socket options go to tcp().

#include <memory>
#include <string>
#include <utility>  // before Boost 1.74's awaitable.hpp, which uses std::exchange unincluded
#include <variant>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include "load_options.hpp"

namespace callisto::load {

// The client TLS settings of a run: TLS 1.2 at least; the server's certificate verified
// against options.ca_file or the system's store, unless options.insecure_skip_verify.
// Throws std::runtime_error naming --ca-file and OpenSSL's reason when the file is unusable.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const load_options& options);

// What to add to a connection error of an https:// run: how to trust the server.
std::string tls_hint(const boost::system::error_code& ec);

class gateway_stream {
public:
    using tcp_stream = boost::beast::tcp_stream;
    using tls_stream = boost::beast::ssl_stream<tcp_stream>;
    using executor_type = tcp_stream::executor_type;

    // TLS when `tls` is not null (the context must outlive the stream).
    gateway_stream(boost::asio::any_io_executor executor, boost::asio::ssl::context* tls);

    // Connects to options.host:options.port within the TCP layer's current expiry, and for
    // TLS sends the host name (SNI, unless it is an address), checks the certificate names
    // it (unless --insecure-skip-verify) and completes the handshake.
    boost::asio::awaitable<void> connect(const load_options& options);

    executor_type get_executor() {
        return std::visit([](auto& s) { return s.get_executor(); }, stream_);
    }
    tcp_stream& tcp() {
        return std::visit([](auto& s) -> tcp_stream& { return boost::beast::get_lowest_layer(s); },
                          stream_);
    }

    template <class MutableBufferSequence, class ReadHandler>
    auto async_read_some(const MutableBufferSequence& buffers, ReadHandler&& handler) {
        return boost::asio::async_initiate<ReadHandler,
                                           void(boost::beast::error_code, std::size_t)>(
            [this](auto h, const MutableBufferSequence& b) {
                std::visit([&](auto& s) { s.async_read_some(b, std::move(h)); }, stream_);
            },
            handler, buffers);
    }

    template <class ConstBufferSequence, class WriteHandler>
    auto async_write_some(const ConstBufferSequence& buffers, WriteHandler&& handler) {
        return boost::asio::async_initiate<WriteHandler,
                                           void(boost::beast::error_code, std::size_t)>(
            [this](auto h, const ConstBufferSequence& b) {
                std::visit([&](auto& s) { s.async_write_some(b, std::move(h)); }, stream_);
            },
            handler, buffers);
    }

    // Beast closes the socket this way when a WebSocket times out.
    friend void beast_close_socket(gateway_stream& s) { s.tcp().close(); }

    template <class TeardownHandler>
    friend void async_teardown(boost::beast::role_type role, gateway_stream& s,
                               TeardownHandler&& handler) {
        std::visit(
            [&](auto& stream) {
                using boost::beast::async_teardown;
                async_teardown(role, stream, std::forward<TeardownHandler>(handler));
            },
            s.stream_);
    }
    friend void teardown(boost::beast::role_type role, gateway_stream& s,
                         boost::beast::error_code& ec) {
        std::visit(
            [&](auto& stream) {
                using boost::beast::teardown;
                teardown(role, stream, ec);
            },
            s.stream_);
    }

private:
    std::variant<tcp_stream, tls_stream> stream_;
};

}  // namespace callisto::load
