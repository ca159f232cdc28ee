#include "gateway/http/http_session.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "gateway/http/beast.hpp"
#include "gateway/http/json_response.hpp"
#include "gateway/http/tls_detect.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;

namespace {
constexpr auto request_timeout = std::chrono::seconds(60);
// After an answer sent without reading the request's body: how long the rest is read and
// dropped, so the client reads the answer instead of a connection reset.
constexpr auto linger_timeout = std::chrono::seconds(2);
// Answers up to this size are not counted against the body budget: each connection may hold
// one, as it may hold a 64 KiB header (refusals and most JSON answers are this small).
constexpr std::size_t uncounted_answer_bytes = 64 * 1024;
}  // namespace

http_session::http_session(client_stream&& stream, http_services& services,
                           connection_limiter::slot slot)
    : stream_(std::move(stream)), services_(services), slot_(std::move(slot)) {}

void http_session::run() {
    // Interactive round trips must not wait for Nagle's algorithm (40 ms per message).
    beast::error_code ignored;
    stream_.tcp().socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
        self->stream_.secure() ? self->do_handshake() : self->do_read();
    });
}

// ---- TLS -------------------------------------------------------------------------------------

void http_session::do_handshake() {
    // As little time as for a first request header: a silent connection holds a slot.
    stream_.tcp().expires_after(services_.header_timeout);
    do_detect();
}

void http_session::do_detect() {
    // What is read here is handed to the handshake (or is the plain request refused).
    stream_.tcp().async_read_some(
        buffer_.prepare(512),
        beast::bind_front_handler(&http_session::on_detect, shared_from_this()));
}

void http_session::on_detect(beast::error_code ec, std::size_t bytes) {
    if (ec) return;
    buffer_.commit(bytes);
    const auto& data = buffer_.cdata();
    switch (classify_first_bytes({static_cast<const char*>(data.data()), data.size()})) {
        case first_bytes::need_more: return do_detect();
        case first_bytes::plain_http: return refuse_plain_http();
        case first_bytes::tls: break;
    }
    stream_.tls()->async_handshake(
        asio::ssl::stream_base::server, buffer_.data(),
        beast::bind_front_handler(&http_session::on_handshake, shared_from_this()));
}

void http_session::on_handshake(beast::error_code ec, std::size_t used) {
    if (ec) {
        services_.log.debug("TLS handshake: " + ec.message());
        return;
    }
    buffer_.consume(used);
    do_read();
}

// Plain HTTP on a TLS port: the client can read a plain answer, so it is told what to use.
void http_session::refuse_plain_http() {
    static const std::string body =
        R"({"reason":"Bad Request","message":"this port speaks HTTPS: use https:// or wss://"})";
    static const std::string answer =
        "HTTP/1.1 400 Bad Request\r\nServer: callisto\r\nContent-Type: application/json\r\n"
        "Connection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    asio::async_write(stream_.tcp(), asio::buffer(answer),
                      [self = shared_from_this()](beast::error_code, std::size_t) {
                          beast::error_code ignored;
                          self->stream_.tcp().socket().shutdown(
                              asio::ip::tcp::socket::shutdown_both, ignored);
                          self->stream_.tcp().close();
                      });
}

// ---- HTTP ------------------------------------------------------------------------------------

void http_session::close() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
        if (self->answering_) {
            self->stopping_ = true;
            return;
        }
        beast::error_code ec;
        self->stream_.tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
        self->stream_.tcp().close();
    });
}

void http_session::do_read() {
    parser_.emplace();
    route_name_ = "not_found";
    user_.clear();
    // Beast would check Content-Length against a limit while parsing the header, before the
    // route (and so its limit, and what sets it) is known: on_header applies the route's own.
    // (Not boost::none: Boost 1.74's parser compares a length with it as larger than none.)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser_->header_limit(64 * 1024);
    // A connection that opens and sends nothing gets little time: idle sockets are what an
    // attacker holding every slot would use.
    if (first_request_)
        stream_.tcp().expires_after(services_.header_timeout);
    else
        stream_.tcp().expires_after(request_timeout);
    // The header first: file uploads have a larger body limit of their own.
    http::async_read_header(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&http_session::on_header, shared_from_this()));
}

void http_session::on_header(beast::error_code ec, std::size_t bytes) {
    if (ec) return on_read(ec, bytes);
    first_request_ = false;
    stream_.tcp().expires_after(request_timeout);
    const auto& req = parser_->get();
    started_ = std::chrono::steady_clock::now();
    method_ = std::string(req.method_string());
    target_ = std::string(req.target());
    keep_alive_ = req.keep_alive();  // an answer may be given before the body is read
    // Who sends it and where it goes are known from the header alone: nothing of the body is
    // read (or buffered, or acknowledged with 100 Continue) for a request that will be refused.
    // E2B's SDKs send the user's token as X-API-KEY (gateway/e2b/): taken as a token, as
    // "Authorization: token T" is, on every route.
    std::string_view authorization = req[http::field::authorization];
    std::string api_key;
    if (authorization.empty() && !req["X-API-KEY"].empty()) {
        api_key = "token " + std::string(req["X-API-KEY"]);
        authorization = api_key;
    }
    auto verdict = services_.dispatcher.on_header(req.method_string(), req.target(), authorization,
                                                  req[http::field::sec_websocket_protocol],
                                                  websocket::is_upgrade(req));
    route_name_ = verdict.where.name();
    user_ = verdict.who ? verdict.who->name : std::string();
    if (verdict.refusal) return send(std::move(*verdict.refusal));
    route_ = std::move(verdict.where);
    who_ = std::move(verdict.who);
    body_limit_ = verdict.body_limit;
    body_limit_note_ = verdict.body_limit_note;
    const auto length = parser_->content_length();
    if (length && *length > body_limit_)
        return send(body_too_large(*length, body_limit_, body_limit_note_));
    // Only where a body is still to come: Boost 1.74 reports body_limit for a parser that is
    // already done (Content-Length: 0) whose limit is set to 0 afterwards.
    if (!parser_->is_done()) parser_->body_limit(body_limit_);
    // The body's bytes count against the server's budget until the answer is written. A
    // chunked body may grow to the route's limit, so that much is reserved.
    const std::size_t expected = length               ? static_cast<std::size_t>(*length)
                                 : parser_->chunked() ? body_limit_
                                                      : 0;
    if (expected > 0 && !services_.request_bodies.try_reserve(expected, body_reservation_)) {
        auto res = error_response(http::status::service_unavailable,
                                  "the server is receiving as many request bodies as it takes at "
                                  "once (--max-body-in-flight); retry shortly");
        res.set(http::field::retry_after, "1");
        return send(std::move(res));
    }
    // curl sends large uploads with "Expect: 100-continue" and waits for the go-ahead.
    if (beast::iequals(req[http::field::expect], "100-continue") && !parser_->is_done()) {
        auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
        http::async_write(stream_, *cont,
                          [self = shared_from_this(), cont](beast::error_code wec, std::size_t n) {
                              if (wec) return self->on_read(wec, n);
                              self->read_body();
                          });
        return;
    }
    read_body();
}

void http_session::read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&http_session::on_read, shared_from_this()));
}

void http_session::on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) {
        stream_.tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
        return;
    }
    if (ec == http::error::body_limit)  // a chunked body past the route's limit
        return send(body_too_large(std::nullopt, body_limit_, body_limit_note_));
    if (ec) {
        // A TLS client that closes without close_notify truncates the stream: a close too.
        if (ec != beast::error::timeout && ec != asio::error::operation_aborted &&
            ec != asio::error::connection_reset && ec != asio::error::eof &&
            ec != asio::ssl::error::stream_truncated) {
            services_.log.debug("http read: " + ec.message());
            // A malformed request gets an answer before the connection closes.
            auto res = error_response(http::status::bad_request,
                                      "malformed HTTP request: " + ec.message());
            res.keep_alive(false);
            return send(std::move(res));
        }
        return;
    }
    answering_ = true;
    http_request req = parser_->release();
    keep_alive_ = req.keep_alive();
    auto self = shared_from_this();
    const bool upgrade = !req[http::field::upgrade].empty();
    services_.dispatcher.dispatch(
        {std::move(route_), std::move(req), std::move(who_), respond_later(),
         [self, upgrade] {
             // A WebSocket (101) or a stream of NDJSON (200) takes over from here.
             self->log_answer(upgrade ? 101 : 200, 0);
             return taken_connection{std::move(self->stream_), std::move(self->slot_)};
         },
         respond_file_later()});
}

respond_fn http_session::respond_later() {
    return [self = shared_from_this()](http_response res) {
        asio::dispatch(self->stream_.get_executor(),
                       [self, res = std::move(res)]() mutable { self->send(std::move(res)); });
    };
}

respond_file_fn http_session::respond_file_later() {
    return [self = shared_from_this()](file_response res) {
        asio::dispatch(self->stream_.get_executor(),
                       [self, res = std::move(res)]() mutable { self->send_file(std::move(res)); });
    };
}

template <class Body>
void http_session::prepare_answer(http::response<Body>& res) {
    answering_ = true;  // also for answers given from on_header
    res.set(http::field::server, "callisto");
    // Every answer: no content sniffing, and a URL with ?token= never leaves as a Referer.
    res.set("X-Content-Type-Options", "nosniff");
    res.set("Referrer-Policy", "no-referrer");
    // An answer given before the body was read ends the connection: the rest of the body is
    // not a request.
    if (!keep_alive_ || stopping_ || !parser_->is_done()) res.keep_alive(false);
    if (method_.empty()) {  // refused before its header was read
        method_ = "-";
        target_ = "-";
        started_ = std::chrono::steady_clock::now();
    }
}

http_response http_session::over_budget(std::string_view what, std::string_view location) {
    std::string message =
        "the server holds as many request and answer bodies as it takes at once "
        "(--max-body-in-flight) and cannot send " +
        std::string(what) + " now; retry shortly";
    if (!location.empty())
        message += ". The request was carried out: its result is at the Location given";
    auto res = error_response(http::status::service_unavailable, message);
    res.set(http::field::retry_after, "1");
    if (!location.empty()) res.set(http::field::location, location);
    services_.log.warn("answer refused: " + std::string(what) + " over --max-body-in-flight");
    return res;
}

void http_session::send(http_response res) {
    if (method_ == "HEAD") drop_body_for_head(res);
    // An answer is held until the client has read it: past a small size it counts against the
    // body budget, so clients that do not read cannot pile answers up without bound. The
    // request's body was handled once its answer exists: its bytes make way for the answer's.
    if (const std::size_t bytes = res.body().size(); bytes > uncounted_answer_bytes) {
        if (parser_->is_done()) body_reservation_.reset();
        if (!services_.request_bodies.try_reserve_answer(bytes, answer_reservation_)) {
            auto refusal = over_budget("an answer of " + std::to_string(bytes) + " bytes",
                                       res[http::field::location]);
            res = std::move(refusal);
        }
    }
    prepare_answer(res);
    log_answer(res.result_int(), res.body().size(), res[http::field::location]);
    auto shared = std::make_shared<http_response>(std::move(res));
    const bool keep_alive = shared->keep_alive();
    // The read's deadline may have passed while a long execution ran.
    stream_.tcp().expires_after(request_timeout);
    http::async_write(
        stream_, *shared,
        [self = shared_from_this(), shared, keep_alive](beast::error_code ec, std::size_t n) {
            self->on_write(keep_alive, ec, n);
        });
}

struct http_session::file_transfer {
    explicit file_transfer(file_response r) : res(std::move(r)), serializer(res) {}
    file_response res;
    http::response_serializer<descriptor_body> serializer;  // refers to res
    bool keep_alive = true;
};

void http_session::send_file(file_response res) {
    if (method_ == "HEAD") {  // GET's headers, Content-Length among them; no file read
        const auto size = res.body().size;
        http_response head{static_cast<http::response_header<>&&>(std::move(res))};
        head.content_length(size);
        return send(std::move(head));
    }
    // What a download holds here is its chunk, counted like any body in flight; the file is
    // read as the client takes it.
    if (parser_->is_done()) body_reservation_.reset();
    if (!services_.request_bodies.try_reserve_answer(descriptor_body::chunk_bytes,
                                                     answer_reservation_))
        return send(over_budget("a file", {}));
    prepare_answer(res);
    log_answer(res.result_int(), static_cast<std::size_t>(res.body().size));
    auto transfer = std::make_shared<file_transfer>(std::move(res));
    transfer->keep_alive = transfer->res.keep_alive();
    write_file_chunk(std::move(transfer));
}

void http_session::write_file_chunk(std::shared_ptr<file_transfer> transfer) {
    // A deadline per chunk, not per file: a large file reaches a slow client that reads, and
    // a client that stops reading is dropped.
    stream_.tcp().expires_after(request_timeout);
    auto& serializer = transfer->serializer;
    http::async_write_some(stream_, serializer,
                           [self = shared_from_this(), transfer = std::move(transfer)](
                               beast::error_code ec, std::size_t n) mutable {
                               if (!ec && !transfer->serializer.is_done()) {
                                   if (!self->stopping_)
                                       return self->write_file_chunk(std::move(transfer));
                                   // The server stops: the client sees a short body, not a file.
                                   ec = asio::error::operation_aborted;
                               }
                               self->on_write(transfer->keep_alive, ec, n);
                           });
}

void http_session::log_answer(int status, std::size_t body_bytes, std::string_view location) {
    services_.requests.answered(method_, target_, route_name_, status, body_bytes,
                                std::chrono::steady_clock::now() - started_, user_, location);
    method_.clear();
}

void http_session::on_write(bool keep_alive, beast::error_code ec, std::size_t) {
    answering_ = false;         // only now: a close() meanwhile must not cut the answer short
    body_reservation_.reset();  // the handler is done with the body
    answer_reservation_.reset();
    if (ec) return;
    if (!keep_alive || stopping_) {
        stream_.tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
        // Closing with unread bytes makes the kernel send a reset, which can destroy the
        // answer before the client reads it (nginx's lingering close).
        if (!parser_->is_done()) {
            stream_.tcp().expires_after(linger_timeout);
            buffer_.clear();
            discard_input();
        }
        return;
    }
    do_read();
}

// Reads and drops until the client closes or the linger deadline passes.
void http_session::discard_input() {
    stream_.async_read_some(buffer_.prepare(16 * 1024),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                if (!ec) self->discard_input();
                            });
}

}  // namespace callisto::gateway
