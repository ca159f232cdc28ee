#pragma once
// A client's connection, plain TCP or TLS, as one type: the HTTP session, the WebSockets and the
// NDJSON streams are written once against it (as Beast's flex server does with templates, here
// with a variant so the sessions stay ordinary classes). It is an Asio AsyncStream; Beast's
// WebSocket finds its teardown below by argument-dependent lookup. Timeouts and socket options
// go to the TCP layer underneath, tcp(). callisto-load uses it for the other end of the same
// connections (bench/load/gateway_stream.hpp): it stays header-only, on Beast and Asio alone.

#include <chrono>
#include <memory>
#include <utility>
#include <variant>

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket/teardown.hpp>

namespace callisto::gateway {

class client_stream {
public:
    using tcp_stream = boost::beast::tcp_stream;
    using tls_stream = boost::beast::ssl_stream<tcp_stream>;
    using executor_type = tcp_stream::executor_type;

    explicit client_stream(tcp_stream&& plain) : stream_(std::move(plain)) {}
    // TLS over `tcp`, with the certificate in `context` (kept alive as long as the stream).
    client_stream(tcp_stream&& tcp, std::shared_ptr<boost::asio::ssl::context> context)
        : context_(std::move(context)),
          stream_(std::in_place_type<tls_stream>, std::move(tcp), *context_) {}

    client_stream(client_stream&&) = default;
    client_stream& operator=(client_stream&&) = default;

    executor_type get_executor() {
        return std::visit([](auto& s) { return s.get_executor(); }, stream_);
    }
    // The TCP connection underneath: timeouts, socket options, shutdown.
    tcp_stream& tcp() {
        return std::visit([](auto& s) -> tcp_stream& { return boost::beast::get_lowest_layer(s); },
                          stream_);
    }
    tls_stream* tls() { return std::get_if<tls_stream>(&stream_); }
    bool secure() const { return std::holds_alternative<tls_stream>(stream_); }

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

    // Ends the connection, calling `done` once on the stream's executor; the caller keeps the
    // stream alive until then. TLS first sends close_notify and waits at most `limit` for the
    // peer's (data read meanwhile is dropped): OpenSSL keeps a session for resumption only if
    // the connection was shut down so, so a TLS 1.2 client without tickets never resumed one.
    // Then, TLS or not, the TCP connection is shut down and closed.
    template <class Handler>
    void async_shutdown(std::chrono::steady_clock::duration limit, Handler&& done) {
        tls_stream* secure_stream = tls();
        if (!secure_stream) {
            close_tcp();
            return boost::asio::post(get_executor(), std::forward<Handler>(done));
        }
        tcp().expires_after(limit);
        secure_stream->async_shutdown(
            [this, done = std::forward<Handler>(done)](boost::beast::error_code) mutable {
                close_tcp();
                done();
            });
    }
    // Shuts the TCP connection down both ways and closes it: no close_notify.
    void close_tcp() {
        boost::beast::error_code ignored;
        tcp().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
        tcp().close();
    }

    // Beast closes the socket this way when a WebSocket times out.
    friend void beast_close_socket(client_stream& s) { s.tcp().close(); }

    template <class TeardownHandler>
    friend void async_teardown(boost::beast::role_type role, client_stream& s,
                               TeardownHandler&& handler) {
        std::visit(
            [&](auto& stream) {
                using boost::beast::async_teardown;
                async_teardown(role, stream, std::forward<TeardownHandler>(handler));
            },
            s.stream_);
    }
    friend void teardown(boost::beast::role_type role, client_stream& s,
                         boost::beast::error_code& ec) {
        std::visit(
            [&](auto& stream) {
                using boost::beast::teardown;
                teardown(role, stream, ec);
            },
            s.stream_);
    }

private:
    std::shared_ptr<boost::asio::ssl::context> context_;  // null for plain TCP
    std::variant<tcp_stream, tls_stream> stream_;
};

}  // namespace callisto::gateway
