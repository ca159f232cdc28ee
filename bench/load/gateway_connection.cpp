#include "gateway_connection.hpp"

#include <random>

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

namespace {

asio::awaitable<tcp::resolver::results_type> resolve(asio::any_io_executor executor,
                                                     const load_options& o) {
    tcp::resolver resolver(executor);
    co_return co_await resolver.async_resolve(o.host, o.port, use_awaitable);
}

}  // namespace

http_connection::http_connection(asio::any_io_executor executor, const load_options& options)
    : executor_(std::move(executor)), options_(options) {}

asio::awaitable<http_answer> http_connection::request(http::verb method, std::string target,
                                                      std::string body,
                                                      std::chrono::seconds timeout) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, options_.host);
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
                stream_.emplace(executor_);
                stream_->expires_after(timeout);
                co_await stream_->async_connect(co_await resolve(executor_, options_),
                                                use_awaitable);
            }
            stream_->expires_after(timeout);
            co_await http::async_write(*stream_, req, use_awaitable);
            http::response_parser<http::string_body> parser;
            parser.body_limit(64u << 20);
            co_await http::async_read_header(*stream_, buffer_, parser, use_awaitable);
            answer_started = true;
            co_await http::async_read(*stream_, buffer_, parser, use_awaitable);
            stream_->expires_never();
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

kernel_socket::kernel_socket(asio::any_io_executor executor, const load_options& options)
    : executor_(std::move(executor)), options_(options) {}

asio::awaitable<void> kernel_socket::open(const std::string& kernel_id) {
    ws_.emplace(executor_);
    buffer_.clear();
    try {
        auto& tcp_layer = beast::get_lowest_layer(*ws_);
        tcp_layer.expires_after(std::chrono::seconds(30));
        co_await tcp_layer.async_connect(co_await resolve(executor_, options_), use_awaitable);
        // Every wait is bounded by the TCP layer's timer (receive sets it per message), not by
        // the WebSocket's own timeouts, so the two never compete.
        ws_->set_option(websocket::stream_base::decorator([token = options_.token](auto& req) {
            req.set(http::field::authorization, "token " + token);
        }));
        ws_->read_message_max(64u << 20);
        tcp_layer.expires_after(std::chrono::seconds(30));
        co_await ws_->async_handshake(options_.host + ":" + options_.port,
                                      "/api/kernels/" + kernel_id + "/channels", use_awaitable);
        tcp_layer.expires_never();
        ws_->text(true);
    } catch (...) {
        ws_.reset();
        throw;
    }
}

asio::awaitable<void> kernel_socket::send(const nlohmann::json& message) {
    const std::string text = message.dump();
    try {
        co_await ws_->async_write(asio::buffer(text), use_awaitable);
    } catch (...) {
        ws_.reset();
        throw;
    }
}

asio::awaitable<std::optional<nlohmann::json>> kernel_socket::receive(
    std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        if (std::chrono::steady_clock::now() >= deadline) {
            ws_.reset();
            co_return std::nullopt;
        }
        buffer_.clear();
        // The socket's own timer bounds the wait; when it fires the socket is closed.
        beast::get_lowest_layer(*ws_).expires_at(deadline);
        try {
            co_await ws_->async_read(buffer_, use_awaitable);
        } catch (const boost::system::system_error& e) {
            ws_.reset();
            if (e.code() == beast::error::timeout) co_return std::nullopt;
            throw;
        }
        beast::get_lowest_layer(*ws_).expires_never();
        if (!ws_->got_text()) continue;  // a binary frame: messages with buffers, not ours
        auto parsed =
            nlohmann::json::parse(beast::buffers_to_string(buffer_.data()), nullptr, false);
        if (parsed.is_object()) co_return parsed;
    }
}

}  // namespace callisto::load
