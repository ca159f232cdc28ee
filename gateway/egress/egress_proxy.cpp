#include "gateway/egress/egress_proxy.hpp"

#include <array>
#include <cstdio>
#include <limits>
#include <span>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include "gateway/egress/proxy_request.hpp"

namespace callisto::gateway::egress {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;

namespace {

ip_address from_asio(const asio::ip::address& a) {
    if (a.is_v4()) return ip_address::v4_from(a.to_v4().to_uint());
    ip_address out;
    out.v6 = true;
    const auto bytes = a.to_v6().to_bytes();
    std::copy(bytes.begin(), bytes.end(), out.bytes.begin());
    return out;
}

asio::ip::address to_asio(const ip_address& a) {
    if (!a.v6) return asio::ip::address_v4(a.v4_value());
    asio::ip::address_v6::bytes_type bytes;
    std::copy(a.bytes.begin(), a.bytes.end(), bytes.begin());
    return asio::ip::address_v6(bytes);
}

auto awaitable_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// A piece of request body read and sent on at a time.
constexpr std::size_t body_piece = 16 * 1024;

}  // namespace

// One client connection and, once connected, its destination. Shared by the coroutines that
// serve it (both directions of a tunnel, the idle watch), all on one strand.
struct egress_proxy::connection {
    connection(tcp::socket s, connection_identity who)
        : client(std::move(s)), upstream(client.get_executor()), idle(client.get_executor()) {
        record.who = std::move(who);
    }
    tcp::socket client;
    tcp::socket upstream;
    asio::steady_timer idle;
    clock_type::time_point started = clock_type::now();
    clock_type::time_point last_activity = started;
    bool done = false;
    connection_record record;
};

egress_proxy::egress_proxy(asio::any_io_executor executor, std::shared_ptr<const allowlist> rules,
                           proxy_settings settings, record_fn on_record, logger log,
                           resolve_fn resolve)
    : executor_(std::move(executor)),
      rules_(std::move(rules)),
      settings_(settings),
      on_record_(std::move(on_record)),
      log_(std::move(log)),
      resolve_(std::move(resolve)),
      rate_(settings.bytes_per_second) {
    if (!resolve_) {
        resolve_ = [executor = executor_](std::string name) -> asio::awaitable<resolved> {
            tcp::resolver resolver(executor);
            resolved out;
            auto results = co_await resolver.async_resolve(name, "", awaitable_ec(out.ec));
            for (const auto& entry : results) out.addresses.push_back(entry.endpoint().address());
            co_return out;
        };
    }
}

std::shared_ptr<egress_proxy> egress_proxy::create(asio::any_io_executor executor,
                                                   std::shared_ptr<const allowlist> rules,
                                                   proxy_settings settings, record_fn on_record,
                                                   logger log, resolve_fn resolve) {
    return std::shared_ptr<egress_proxy>(new egress_proxy(std::move(executor), std::move(rules),
                                                          settings, std::move(on_record),
                                                          std::move(log), std::move(resolve)));
}

void egress_proxy::serve(tcp::socket client, connection_identity who) {
    // The connection's own strand: its coroutines never run at once, whatever the pool size.
    auto strand = asio::make_strand(executor_);
    tcp::socket on_strand(strand);
    error_code ec;
    const auto protocol = client.local_endpoint(ec).protocol();
    if (ec) return;
    on_strand.assign(protocol, client.release(), ec);
    if (ec) return;
    auto c = std::make_shared<connection>(std::move(on_strand), std::move(who));
    {
        std::lock_guard lock(mutex_);
        if (stopped_) return;  // the socket closes with `c`
        std::erase_if(connections_, [](const auto& w) { return w.expired(); });
        connections_.push_back(c);
    }
    asio::co_spawn(strand, handle(std::move(c)), asio::detached);
}

void egress_proxy::stop() {
    std::vector<std::weak_ptr<connection>> open;
    {
        std::lock_guard lock(mutex_);
        stopped_ = true;
        open.swap(connections_);
    }
    // On each connection's strand: closing its sockets fails its pending operations, and its
    // coroutine records it and ends.
    for (const auto& w : open) {
        if (auto c = w.lock()) {
            asio::post(c->client.get_executor(), [c] {
                if (c->record.ended.empty()) c->record.ended = "stopped";
                error_code ignored;
                c->client.close(ignored);
                c->upstream.close(ignored);
                c->idle.cancel();
            });
        }
    }
}

asio::awaitable<void> egress_proxy::answer(std::shared_ptr<connection> c, unsigned status,
                                           std::string_view phrase, std::string_view body) {
    c->record.status = status;
    const auto text = plain_answer(status, phrase, body);
    error_code ec;
    co_await asio::async_write(c->client, asio::buffer(text), awaitable_ec(ec));
}

void egress_proxy::relayed(connection& c, bool upward, std::uint64_t n) {
    (upward ? c.record.bytes_up : c.record.bytes_down) += n;
    (upward ? bytes_up_ : bytes_down_).fetch_add(n, std::memory_order_relaxed);
}

proxy_activity egress_proxy::activity() const {
    return {allowed_.load(), refused_.load(), open_.load(), bytes_up_.load(), bytes_down_.load()};
}

void egress_proxy::finish(connection& c) {
    if (c.done) return;
    c.done = true;
    (c.record.allowed ? allowed_ : refused_).fetch_add(1, std::memory_order_relaxed);
    c.idle.cancel();
    error_code ignored;
    c.client.shutdown(tcp::socket::shutdown_both, ignored);
    c.client.close(ignored);
    c.upstream.close(ignored);
    c.record.duration = clock_type::now() - c.started;
    if (on_record_) on_record_(c.record);
}

asio::awaitable<void> egress_proxy::handle(std::shared_ptr<connection> c) {
    auto self = shared_from_this();
    // Counted for as long as the connection is open; one past the cap is told so and closed.
    const auto open = open_.fetch_add(1) + 1;
    struct uncount {
        std::atomic<std::size_t>& n;
        ~uncount() { n.fetch_sub(1); }
    } guard{open_};
    asio::co_spawn(c->client.get_executor(), watch_idle(c), asio::detached);
    if (open > settings_.max_connections) {
        c->record.rule = rule_connection_limit;
        c->record.reason = "this kernel has " + std::to_string(settings_.max_connections) +
                           " egress connections open, the most it may";
        co_await answer(c, 429, "Too Many Requests", c->record.reason + "\n");
        co_return finish(*c);
    }

    // The read buffer holds a head and at most a piece of body beyond it: what the parser
    // has not handed on yet, never the body whole.
    beast::flat_buffer buffer(settings_.max_header + body_piece);
    request_parser parser;
    parser.header_limit(static_cast<std::uint32_t>(settings_.max_header));
    // The body is streamed: its length is no limit.
    parser.body_limit((std::numeric_limits<std::uint64_t>::max)());
    error_code ec;
    co_await http::async_read_header(c->client, buffer, parser, awaitable_ec(ec));
    if (ec) {
        c->record.rule = rule_bad_request;
        c->record.reason = "reading the request: " + ec.message();
        if (ec != http::error::end_of_stream && !c->done)
            co_await answer(c, 400, "Bad Request", c->record.reason + "\n");
        co_return finish(*c);
    }
    const auto& header = parser.get().base();
    c->record.method = std::string(header.method_string());
    auto checked = check_request(header);
    if (auto* bad = std::get_if<bad_request>(&checked)) {
        c->record.rule = rule_bad_request;
        c->record.reason = bad->reason;
        co_await answer(c, bad->status, bad->status == 417 ? "Expectation Failed" : "Bad Request",
                        "egress proxy: " + bad->reason + "\n");
        co_return finish(*c);
    }
    const auto target = std::get<proxy_target>(std::move(checked));
    c->record.host = target.host;
    c->record.port = target.port;

    if (!co_await open_destination(c, target.host, target.port)) co_return finish(*c);

    if (target.tunnel) {
        // Whatever the client sent after its CONNECT (a TLS hello, pipelined) goes first.
        if (buffer.size() > 0) {
            relayed(*c, true, buffer.size());
            co_await asio::async_write(c->upstream, buffer.data(), awaitable_ec(ec));
            buffer.consume(buffer.size());
        }
        c->record.status = 200;
        static constexpr std::string_view established =
            "HTTP/1.1 200 Connection established\r\n\r\n";
        if (!ec) co_await asio::async_write(c->client, asio::buffer(established), awaitable_ec(ec));
        if (!ec) co_await tunnel(c);
        co_return finish(*c);
    }
    co_await forward(c, parser, buffer, target);
    co_return finish(*c);
}

asio::awaitable<bool> egress_proxy::open_destination(std::shared_ptr<connection> c,
                                                     std::string_view host_text,
                                                     std::uint16_t port) {
    auto d = rules_->decide(host_text, port);
    c->record.rule = d.rule;
    c->record.reason = d.reason;
    const auto refuse = [&](const decision& why) -> asio::awaitable<bool> {
        c->record.allowed = false;
        c->record.rule = why.rule;
        c->record.reason = why.reason;
        co_await answer(c, 403, "Forbidden",
                        "egress refused by rule \"" + why.rule + "\": " + why.reason + "\n");
        co_return false;
    };
    if (!d.allowed) co_return co_await refuse(d);

    std::vector<asio::ip::address> addresses;
    auto parsed = parse_host(host_text);
    if (const auto* literal = std::get_if<ip_address>(&std::get<host>(parsed))) {
        addresses.push_back(to_asio(*literal));
    } else {
        auto r = co_await resolve_(std::get<host_name>(std::get<host>(parsed)).name);
        if (r.ec || r.addresses.empty()) {
            c->record.reason = "cannot resolve " + std::string(host_text) +
                               (r.ec ? ": " + r.ec.message() : std::string());
            co_await answer(c, 502, "Bad Gateway", "egress proxy: " + c->record.reason + "\n");
            co_return false;
        }
        addresses = std::move(r.addresses);
    }
    // Every address the name resolved to is checked, not only the first: the proxy connects
    // only to those that pass, so a rebinding answer that mixes in 127.0.0.1 never reaches it.
    std::vector<asio::ip::address> allowed;
    std::optional<decision> first_refusal;
    for (const auto& a : addresses) {
        auto check = rules_->check_resolved(from_asio(a), port);
        if (check.allowed)
            allowed.push_back(a);
        else if (!first_refusal)
            first_refusal = std::move(check);
    }
    if (allowed.empty()) co_return co_await refuse(*first_refusal);

    c->record.allowed = true;
    error_code ec;
    for (const auto& a : allowed) {
        c->upstream = tcp::socket(c->client.get_executor());
        asio::steady_timer deadline(c->client.get_executor(), settings_.connect_timeout);
        deadline.async_wait([c](error_code e) {
            if (!e) c->upstream.close(e);
        });
        co_await c->upstream.async_connect(tcp::endpoint(a, port), awaitable_ec(ec));
        deadline.cancel();
        if (!ec && c->upstream.is_open()) {
            c->record.address = a.to_string();
            c->last_activity = clock_type::now();
            co_return true;
        }
        if (!ec) ec = asio::error::timed_out;
    }
    c->record.reason = "cannot connect to " + std::string(host_text) + ": " + ec.message();
    co_await answer(c, 502, "Bad Gateway", "egress proxy: " + c->record.reason + "\n");
    co_return false;
}

asio::awaitable<void> egress_proxy::tunnel(std::shared_ptr<connection> c) {
    // Both directions at once, on this strand; the tunnel ends when both have ended (an end
    // of stream one way is passed on as a half-close) or when the idle watch closes it.
    asio::steady_timer both_done(c->client.get_executor(), clock_type::time_point::max());
    bool up_done = false;
    asio::co_spawn(c->client.get_executor(), pump(c, true),
                   [&up_done, &both_done](std::exception_ptr) {
                       up_done = true;
                       both_done.cancel();
                   });
    co_await pump(c, false);
    if (!up_done) {
        error_code ec;
        co_await both_done.async_wait(awaitable_ec(ec));
    }
}

asio::awaitable<bool> egress_proxy::send_up(std::shared_ptr<connection> c,
                                            std::vector<asio::const_buffer> pieces) {
    const auto n = asio::buffer_size(pieces);
    c->last_activity = clock_type::now();
    error_code ec;
    if (const auto wait = rate_.reserve(n, clock_type::now());
        wait > clock_type::duration::zero()) {
        asio::steady_timer pause(c->client.get_executor(), wait);
        co_await pause.async_wait(awaitable_ec(ec));
        if (c->done) co_return false;
    }
    co_await asio::async_write(c->upstream, pieces, awaitable_ec(ec));
    if (ec) co_return false;
    relayed(*c, true, n);
    c->last_activity = clock_type::now();
    co_return true;
}

asio::awaitable<void> egress_proxy::body_failed(std::shared_ptr<connection> c, error_code ec,
                                                std::uint64_t body_bytes) {
    // The destination must never take a part for the whole: its connection goes now, before
    // a chunked body's last chunk or a length's last byte.
    error_code ignored;
    c->upstream.close(ignored);
    c->record.rule = rule_bad_request;
    const bool went_away = ec == http::error::partial_message || ec == http::error::end_of_stream ||
                           ec == asio::error::eof || ec == asio::error::connection_reset ||
                           ec == asio::error::operation_aborted || c->done;
    if (went_away) {
        c->record.reason = "the client's request body ended early, after " +
                           std::to_string(body_bytes) + " bytes (" + ec.message() + ")";
        co_return;
    }
    c->record.reason =
        "a malformed request body, after " + std::to_string(body_bytes) + " bytes: " + ec.message();
    co_await answer(c, 400, "Bad Request", "egress proxy: " + c->record.reason + "\n");
}

namespace {

// The next piece of the request's body, read into `into`: 0 once the body is complete (or
// on an error, in `ec`). A read that brings only framing (a chunk's size line) reads again.
asio::awaitable<std::size_t> read_body_piece(tcp::socket& s, beast::flat_buffer& buffer,
                                             egress_proxy::request_parser& parser,
                                             std::span<char> into, error_code& ec) {
    while (!parser.is_done()) {
        parser.get().body().data = into.data();
        parser.get().body().size = into.size();
        co_await http::async_read_some(s, buffer, parser, awaitable_ec(ec));
        if (ec == http::error::need_buffer) ec = {};
        if (ec) co_return 0;
        if (const auto n = into.size() - parser.get().body().size; n > 0) co_return n;
    }
    co_return 0;
}

// The interim answer to `Expect: 100-continue`; false when the client is gone.
asio::awaitable<bool> send_continue(tcp::socket& client) {
    static constexpr std::string_view continue_100 = "HTTP/1.1 100 Continue\r\n\r\n";
    error_code ec;
    co_await asio::async_write(client, asio::buffer(continue_100), awaitable_ec(ec));
    co_return !ec;
}

// The buffers of one write, made outside any co_await expression (GCC 11 cannot put a braced
// list's array in a coroutine's frame).
template <class... Texts>
std::vector<asio::const_buffer> pieces_of(const Texts&... texts) {
    return {asio::buffer(std::string_view(texts))...};
}

std::string chunk_size_line(std::size_t n) {
    char line[32];
    const int len = std::snprintf(line, sizeof line, "%zx\r\n", n);
    return std::string(line, static_cast<std::size_t>(len));
}

}  // namespace

asio::awaitable<std::optional<std::size_t>> egress_proxy::next_body_piece(
    std::shared_ptr<connection> c, beast::flat_buffer& buffer, request_parser& parser,
    std::span<char> into, std::uint64_t& body_bytes) {
    error_code ec;
    const auto n = co_await read_body_piece(c->client, buffer, parser, into, ec);
    body_bytes += n;
    if (ec) {
        co_await body_failed(c, ec, body_bytes);
        co_return std::nullopt;
    }
    co_return n;
}

asio::awaitable<bool> egress_proxy::send_request(std::shared_ptr<connection> c,
                                                 request_parser& parser, beast::flat_buffer& buffer,
                                                 const proxy_target& target) {
    const auto& header = parser.get().base();
    std::array<char, body_piece> piece;
    std::uint64_t body_bytes = 0;
    // A client that sent `Expect: 100-continue` waits for a 100 before its body (curl for a
    // second, then sends it anyway): the request is allowed and its destination connected by
    // now. Sent even when some of the body came already, as a client expecting it must take.
    const bool continue_first = target.expect_continue && !parser.is_done();
    if (!parser.chunked()) {
        // A length (or no body): the head says it, and the bytes follow as they come. Bytes
        // past the length are never read, so never sent on.
        const auto head = forward_head(header, target, parser.content_length().value_or(0));
        if (!co_await send_up(c, pieces_of(head))) co_return false;
        if (continue_first && !co_await send_continue(c->client)) co_return false;
        while (!parser.is_done()) {
            const auto n = co_await next_body_piece(c, buffer, parser, piece, body_bytes);
            if (!n) co_return false;
            if (*n > 0 && !co_await send_up(c, pieces_of(std::string_view(piece.data(), *n))))
                co_return false;
        }
        co_return true;
    }
    // Chunked: held up to chunked_hold, sent on with its length if it ends there (nothing was
    // sent yet if it turns out malformed); past it, sent on chunked as it comes.
    std::string held;
    held.reserve(settings_.chunked_hold + piece.size());
    if (continue_first && !co_await send_continue(c->client)) co_return false;
    while (!parser.is_done() && held.size() <= settings_.chunked_hold) {
        const auto n = co_await next_body_piece(c, buffer, parser, piece, body_bytes);
        if (!n) co_return false;
        held.append(piece.data(), *n);
    }
    if (parser.is_done()) {
        const auto head = forward_head(header, target, held.size());
        co_return co_await send_up(c, pieces_of(head, held));
    }
    const auto head = forward_head(header, target, std::nullopt);
    auto size_line = chunk_size_line(held.size());
    static constexpr std::string_view crlf = "\r\n";
    if (!co_await send_up(c, pieces_of(head, size_line, held, crlf))) co_return false;
    held = std::string();  // its memory too: what follows goes a piece at a time
    while (!parser.is_done()) {
        const auto n = co_await next_body_piece(c, buffer, parser, piece, body_bytes);
        if (!n) co_return false;
        if (*n == 0) continue;
        size_line = chunk_size_line(*n);
        if (!co_await send_up(c, pieces_of(size_line, std::string_view(piece.data(), *n), crlf)))
            co_return false;
    }
    // The last chunk; the client's trailer fields, if any, are not sent on.
    static constexpr std::string_view last = "0\r\n\r\n";
    co_return co_await send_up(c, pieces_of(last));
}

asio::awaitable<void> egress_proxy::forward(std::shared_ptr<connection> c, request_parser& request,
                                            beast::flat_buffer& buffered,
                                            const proxy_target& target) {
    if (!co_await send_request(c, request, buffered, target)) co_return;
    error_code ec;
    beast::flat_buffer buffer(settings_.max_header + body_piece);
    http::response_parser<http::empty_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(settings_.max_header));
    // The body is streamed by pump, never held: its length is no limit (Beast refuses a
    // Content-Length past 8 MB at the header by default, which was a 502 for any download).
    parser.body_limit((std::numeric_limits<std::uint64_t>::max)());
    co_await http::async_read_header(c->upstream, buffer, parser, awaitable_ec(ec));
    if (ec) {
        c->record.reason = "reading the destination's answer: " + ec.message();
        co_await answer(c, 502, "Bad Gateway", "egress proxy: " + c->record.reason + "\n");
        co_return;
    }
    c->record.status = parser.get().result_int();
    const auto response = response_head(parser.get().base());
    co_await asio::async_write(c->client, asio::buffer(response), awaitable_ec(ec));
    if (ec) co_return;
    relayed(*c, false, response.size());
    if (buffer.size() > 0) {
        relayed(*c, false, buffer.size());
        co_await asio::async_write(c->client, buffer.data(), awaitable_ec(ec));
        if (ec) co_return;
    }
    // The rest of the body as it comes, until the destination closes (it was asked to):
    // only this direction; nothing more the client sends is read.
    co_await pump(c, false);
}

asio::awaitable<void> egress_proxy::pump(std::shared_ptr<connection> c, bool upward) {
    auto& from = upward ? c->client : c->upstream;
    auto& to = upward ? c->upstream : c->client;
    std::array<char, 16 * 1024> chunk;
    asio::steady_timer pause(c->client.get_executor());
    error_code ec;
    while (!c->done) {
        const auto n = co_await from.async_read_some(asio::buffer(chunk), awaitable_ec(ec));
        if (ec) break;
        c->last_activity = clock_type::now();
        if (const auto wait = rate_.reserve(n, clock_type::now());
            wait > clock_type::duration::zero()) {
            pause.expires_after(wait);
            co_await pause.async_wait(awaitable_ec(ec));
            if (c->done) break;
        }
        co_await asio::async_write(to, asio::buffer(chunk.data(), n), awaitable_ec(ec));
        if (ec) break;
        relayed(*c, upward, n);
        c->last_activity = clock_type::now();
    }
    if (ec == asio::error::eof) {
        error_code ignored;
        to.shutdown(tcp::socket::shutdown_send, ignored);
    } else {
        // An error one way ends both: the other direction's pending read fails at once.
        error_code ignored;
        from.close(ignored);
        to.close(ignored);
    }
}

asio::awaitable<void> egress_proxy::watch_idle(std::shared_ptr<connection> c) {
    error_code ec;
    while (!c->done) {
        c->idle.expires_at(c->last_activity + settings_.idle_timeout);
        co_await c->idle.async_wait(awaitable_ec(ec));
        if (c->done) co_return;
        if (clock_type::now() >= c->last_activity + settings_.idle_timeout) {
            c->record.ended = "idle";
            error_code ignored;
            c->client.close(ignored);
            c->upstream.close(ignored);
            co_return;
        }
    }
}

}  // namespace callisto::gateway::egress
