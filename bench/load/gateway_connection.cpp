#include "gateway_connection.hpp"

#include <cctype>
#include <charconv>
#include <deque>
#include <random>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/error.hpp>
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
                                 std::shared_ptr<asio::ssl::context> tls)
    : executor_(std::move(executor)), options_(options), tls_(std::move(tls)) {}

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
                stream_.emplace(make_gateway_stream(executor_, tls_));
                stream_->tcp().expires_after(timeout);
                co_await connect_to_gateway(*stream_, options_);
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
            int retry_after = 0;
            if (auto it = res.find(http::field::retry_after); it != res.end())
                retry_after = std::atoi(std::string(it->value()).c_str());
            co_return http_answer{res.result_int(), std::move(res.body()), retry_after};
        } catch (const boost::system::system_error& e) {
            stream_.reset();
            buffer_.clear();
            const bool stale = reused && !answer_started && e.code() != beast::error::timeout;
            if (!stale || attempt > 0) throw;
        }
    }
}

std::optional<std::uint64_t> message_sequence(std::string_view text) {
    static constexpr std::string_view key = "\"callisto_seq\":";
    const auto at = text.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    auto i = at + key.size();
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (ec != std::errc() || end == text.data() + i) return std::nullopt;
    return value;
}

bool mentions_replay_gap(std::string_view text) {
    return text.find("\"callisto_gap\":") != std::string_view::npos;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> replay_gap(const nlohmann::json& message) {
    if (!message.is_object()) return std::nullopt;
    const auto metadata = message.find("metadata");
    if (metadata == message.end() || !metadata->is_object()) return std::nullopt;
    const auto gap = metadata->find("callisto_gap");
    if (gap == metadata->end() || !gap->is_object()) return std::nullopt;
    const auto from = gap->find("from");
    const auto to = gap->find("to");
    if (from == gap->end() || to == gap->end() || !from->is_number_unsigned() ||
        !to->is_number_unsigned())
        return std::nullopt;
    return std::pair{from->get<std::uint64_t>(), to->get<std::uint64_t>()};
}

namespace {

// Percent-encodes all but RFC 3986's unreserved characters (a session is a UUID: nothing).
std::string url_encoded(std::string_view text) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (const unsigned char ch : text) {
        if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            out += static_cast<char>(ch);
        } else {
            out += '%';
            out += hex[ch >> 4];
            out += hex[ch & 15];
        }
    }
    return out;
}

}  // namespace

std::string channels_target(const std::string& kernel_id, const std::string& session,
                            std::optional<std::uint64_t> since) {
    std::string target =
        "/api/kernels/" + kernel_id + "/channels?session_id=" + url_encoded(session);
    if (since) target += "&since=" + std::to_string(*since);
    return target;
}

std::string drop_reason(const boost::system::error_code& ec, const websocket::close_reason& close) {
    if (ec == websocket::error::closed) {
        std::string why = "the server closed it";
        if (close.code == websocket::close_code::none) return why + " (a close frame, no code)";
        why += " with code " + std::to_string(static_cast<unsigned>(close.code));
        if (!close.reason.empty()) why += " \"" + std::string(close.reason) + "\"";
        return why;
    }
    if (ec == asio::error::eof || ec == beast::http::error::end_of_stream)
        return "the server closed the TCP connection without a close frame";
    if (ec == asio::error::connection_reset) return "connection reset by the server or the network";
    return ec.message();
}

struct kernel_socket::connection {
    connection(const asio::any_io_executor& executor, std::shared_ptr<asio::ssl::context> tls)
        : ws(make_gateway_stream(executor, tls)), arrival(executor) {}

    websocket::stream<gateway_stream> ws;
    beast::flat_buffer buffer;
    std::string expected;                   // the msg_id whose answers are kept
    std::deque<nlohmann::json> inbox;       // kept messages not yet received
    asio::steady_timer arrival;             // a receive() waits on it; cancelled when one arrives
    std::optional<std::string> failure;     // why reading stopped
    std::optional<std::uint64_t> last_seq;  // the highest callisto_seq read
};

kernel_socket::kernel_socket(asio::any_io_executor executor, const load_options& options,
                             std::shared_ptr<asio::ssl::context> tls)
    : executor_(std::move(executor)), options_(options), tls_(std::move(tls)) {}

asio::awaitable<void> kernel_socket::open(const std::string& kernel_id, const std::string& session,
                                          bool resume,
                                          std::chrono::steady_clock::duration timeout) {
    close();
    auto c = std::make_shared<connection>(executor_, tls_);
    c->expected = expected_;
    auto& tcp_layer = c->ws.next_layer().tcp();
    tcp_layer.expires_after(timeout);
    co_await connect_to_gateway(c->ws.next_layer(), options_);
    // As browsers and jupyter_client do: a small request leaves at once.
    tcp_layer.socket().set_option(tcp::no_delay(true));
    c->ws.set_option(websocket::stream_base::decorator([token = options_.token](auto& req) {
        req.set(http::field::authorization, "token " + token);
    }));
    c->ws.read_message_max(64u << 20);
    const auto since = resume ? std::optional<std::uint64_t>(last_seq_.value_or(0)) : std::nullopt;
    websocket::response_type answer;
    boost::system::error_code ec;
    co_await c->ws.async_handshake(answer, host_header(options_.host, options_.port),
                                   channels_target(kernel_id, session, since),
                                   asio::redirect_error(use_awaitable, ec));
    if (ec == websocket::error::upgrade_declined)
        throw handshake_refused(answer.result_int(), answer.body());
    if (ec) throw boost::system::system_error(ec);
    // From here the waits are bounded by receive()'s deadline, not by the stream's timer.
    tcp_layer.expires_never();
    c->ws.text(true);
    connection_ = c;
    asio::co_spawn(executor_, read_all(std::move(c)), asio::detached);
}

bool kernel_socket::is_open() const { return connection_ && !connection_->failure; }

std::string kernel_socket::failure() const {
    return connection_ && connection_->failure ? *connection_->failure : std::string();
}

std::optional<std::uint64_t> kernel_socket::last_sequence() const {
    auto seq = last_seq_;
    if (connection_ && connection_->last_seq && (!seq || *connection_->last_seq > *seq))
        seq = connection_->last_seq;
    return seq;
}

void kernel_socket::close() {
    if (!connection_) return;
    // What the connection read counts; what its reader may still read after this does not
    // (nobody receives it).
    last_seq_ = last_sequence();
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
            c->failure = drop_reason(e.code(), c->ws.reason());
            c->arrival.cancel();
            co_return;
        }
        // A flat_buffer's data is one contiguous range: searched in place, not copied.
        const auto data = c->buffer.data();
        const std::string_view text(static_cast<const char*>(data.data()), data.size());
        // Every relayed message carries its sequence number, binary frames (messages with
        // buffers) too; they grow, but a max costs nothing should one come out of order.
        if (auto seq = message_sequence(text); seq && (!c->last_seq || *seq > *c->last_seq))
            c->last_seq = seq;
        // A binary frame carries a message with buffers, never ours; another client's message
        // does not name our request, which a search tells without parsing.
        if (!c->ws.got_text()) continue;
        const bool gap = mentions_replay_gap(text);
        if (!gap && (c->expected.empty() || text.find(c->expected) == std::string_view::npos))
            continue;
        auto parsed = nlohmann::json::parse(text, nullptr, false);
        if (!parsed.is_object()) continue;
        if (!(gap && replay_gap(parsed))) {
            const auto& parent = parsed["parent_header"];
            if (c->expected.empty() || !parent.is_object() ||
                parent.value("msg_id", "") != c->expected)
                continue;
        }
        c->inbox.push_back(std::move(parsed));
        c->arrival.cancel();
    }
}

void kernel_socket::expect(std::string msg_id) {
    expected_ = std::move(msg_id);
    if (!connection_) return;
    connection_->expected = expected_;
    connection_->inbox.clear();
}

asio::awaitable<void> kernel_socket::send(const nlohmann::json& message) {
    if (!connection_) throw connection_dropped("not connected");
    auto c = connection_;
    if (c->failure) {
        const std::string why = *c->failure;
        close();
        throw connection_dropped(why);
    }
    const std::string text = message.dump();
    try {
        co_await c->ws.async_write(asio::buffer(text), use_awaitable);
    } catch (const boost::system::system_error& e) {
        const std::string why = drop_reason(e.code(), c->ws.reason());
        close();
        throw connection_dropped(why);
    }
}

asio::awaitable<std::optional<nlohmann::json>> kernel_socket::receive(
    std::chrono::steady_clock::time_point deadline, bool close_at_deadline) {
    if (!connection_) throw connection_dropped("not connected");
    auto c = connection_;
    for (;;) {
        if (!c->inbox.empty()) {
            auto m = std::move(c->inbox.front());
            c->inbox.pop_front();
            co_return m;
        }
        if (c->failure) {
            const std::string why = *c->failure;
            close();
            throw connection_dropped(why);
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            if (close_at_deadline) close();
            co_return std::nullopt;
        }
        c->arrival.expires_at(deadline);
        boost::system::error_code ec;  // cancelled: a message or a failure came
        co_await c->arrival.async_wait(asio::redirect_error(use_awaitable, ec));
    }
}

}  // namespace callisto::load
