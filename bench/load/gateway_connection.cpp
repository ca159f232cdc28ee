#include "gateway_connection.hpp"

#include <deque>
#include <random>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

namespace callisto::load {

namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::use_awaitable;
using tcp = asio::ip::tcp;

std::string new_id() {
    static thread_local std::mt19937_64 random{std::random_device{}()};
    static const char* hex = "0123456789abcdef";
    std::string id(36, '-');
    for (std::size_t i = 0; i < id.size(); ++i)
        if (i != 8 && i != 13 && i != 18 && i != 23) id[i] = hex[random() & 15];
    id[14] = '4';
    return id;
}

nlohmann::json make_message(const std::string& msg_type, nlohmann::json content,
                            const std::string& session, const char* channel) {
    return {{"header",
             {{"msg_id", new_id()},
              {"msg_type", msg_type},
              {"username", "callisto-load"},
              {"session", session},
              {"date", "2026-01-01T00:00:00.000000Z"},
              {"version", "5.3"}}},
            {"parent_header", nlohmann::json::object()},
            {"metadata", nlohmann::json::object()},
            {"content", std::move(content)},
            {"channel", channel},
            {"buffers", nlohmann::json::array()}};
}

http_connection::http_connection(asio::any_io_executor executor, const load_options& options,
                                 asio::ssl::context* tls)
    : executor_(std::move(executor)), options_(options), tls_(tls) {}

asio::awaitable<http_answer> http_connection::request(http::verb method, std::string target,
                                                      std::string body,
                                                      std::chrono::seconds timeout) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, host_header(options_.host, options_.port));
    req.set(http::field::authorization, "token " + options_.token);
    req.keep_alive(true);
    if (!body.empty()) {
        req.set(http::field::content_type, "application/json");
        req.body() = std::move(body);
    }
    req.prepare_payload();
    // A kept-alive connection the server closed while it was idle fails at once, before any
    // answer: that one request is sent again on a new connection, as HTTP clients do.
    for (int attempt = 0;; ++attempt) {
        const bool reused = stream_.has_value();
        bool answer_started = false;
        try {
            if (!stream_) {
                stream_.emplace(executor_, tls_);
                stream_->tcp().expires_after(timeout);
                co_await stream_->connect(options_);
            }
            stream_->tcp().expires_after(timeout);
            co_await http::async_write(*stream_, req, use_awaitable);
            http::response_parser<http::string_body> parser;
            parser.body_limit(64u << 20);
            co_await http::async_read_header(*stream_, buffer_, parser, use_awaitable);
            answer_started = true;
            co_await http::async_read(*stream_, buffer_, parser, use_awaitable);
            stream_->tcp().expires_never();
            auto res = parser.release();
            if (!res.keep_alive()) stream_.reset();
            co_return http_answer{res.result_int(), std::move(res.body())};
        } catch (const boost::system::system_error& e) {
            stream_.reset();
            buffer_.clear();
            const bool stale = reused && !answer_started && e.code() != beast::error::timeout;
            if (!stale || attempt > 0) throw;
        }
    }
}

struct kernel_socket::connection {
    connection(const asio::any_io_executor& executor, asio::ssl::context* tls)
        : ws(executor, tls), arrival(executor) {}

    websocket::stream<gateway_stream> ws;
    beast::flat_buffer buffer;
    std::string expected;              // the msg_id whose answers are kept
    std::deque<nlohmann::json> inbox;  // kept messages not yet received
    asio::steady_timer arrival;        // a receive() waits on it; cancelled when one arrives
    std::optional<boost::system::system_error> failure;  // why reading stopped
};

kernel_socket::kernel_socket(asio::any_io_executor executor, const load_options& options,
                             asio::ssl::context* tls)
    : executor_(std::move(executor)), options_(options), tls_(tls) {}

asio::awaitable<void> kernel_socket::open(const std::string& kernel_id) {
    close();
    auto c = std::make_shared<connection>(executor_, tls_);
    auto& tcp_layer = c->ws.next_layer().tcp();
    tcp_layer.expires_after(std::chrono::seconds(30));
    co_await c->ws.next_layer().connect(options_);
    // As browsers and jupyter_client do: a small request leaves at once.
    tcp_layer.socket().set_option(tcp::no_delay(true));
    c->ws.set_option(websocket::stream_base::decorator([token = options_.token](auto& req) {
        req.set(http::field::authorization, "token " + token);
    }));
    c->ws.read_message_max(64u << 20);
    co_await c->ws.async_handshake(host_header(options_.host, options_.port),
                                   "/api/kernels/" + kernel_id + "/channels", use_awaitable);
    // From here the waits are bounded by receive()'s deadline, not by the stream's timer.
    tcp_layer.expires_never();
    c->ws.text(true);
    connection_ = c;
    asio::co_spawn(executor_, read_all(std::move(c)), asio::detached);
}

void kernel_socket::close() {
    if (!connection_) return;
    boost::system::error_code ignored;
    // The reader's read ends with an error; it holds the connection until then.
    connection_->ws.next_layer().tcp().socket().close(ignored);
    connection_.reset();
}

asio::awaitable<void> kernel_socket::read_all(std::shared_ptr<connection> c) {
    for (;;) {
        c->buffer.clear();
        try {
            co_await c->ws.async_read(c->buffer, use_awaitable);
        } catch (const boost::system::system_error& e) {
            c->failure = e;
            c->arrival.cancel();
            co_return;
        }
        // A binary frame carries a message with buffers, never ours; another client's message
        // does not name our request, which a search tells without parsing.
        if (!c->ws.got_text() || c->expected.empty()) continue;
        std::string text = beast::buffers_to_string(c->buffer.data());
        if (text.find(c->expected) == std::string::npos) continue;
        auto parsed = nlohmann::json::parse(text, nullptr, false);
        if (!parsed.is_object()) continue;
        const auto& parent = parsed["parent_header"];
        if (!parent.is_object() || parent.value("msg_id", "") != c->expected) continue;
        c->inbox.push_back(std::move(parsed));
        c->arrival.cancel();
    }
}

void kernel_socket::expect(std::string msg_id) {
    if (!connection_) return;
    connection_->expected = std::move(msg_id);
    connection_->inbox.clear();
}

asio::awaitable<void> kernel_socket::send(const nlohmann::json& message) {
    if (!connection_) throw boost::system::system_error(asio::error::not_connected);
    auto c = connection_;
    const std::string text = message.dump();
    try {
        co_await c->ws.async_write(asio::buffer(text), use_awaitable);
    } catch (...) {
        close();
        throw;
    }
}

asio::awaitable<std::optional<nlohmann::json>> kernel_socket::receive(
    std::chrono::steady_clock::time_point deadline) {
    if (!connection_) throw boost::system::system_error(asio::error::not_connected);
    auto c = connection_;
    for (;;) {
        if (!c->inbox.empty()) {
            auto m = std::move(c->inbox.front());
            c->inbox.pop_front();
            co_return m;
        }
        if (c->failure) {
            auto failure = *c->failure;
            close();
            throw failure;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            close();
            co_return std::nullopt;
        }
        c->arrival.expires_at(deadline);
        boost::system::error_code ec;  // cancelled: a message or a failure came
        co_await c->arrival.async_wait(asio::redirect_error(use_awaitable, ec));
    }
}

}  // namespace callisto::load
