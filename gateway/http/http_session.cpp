#include "gateway/http/http_session.hpp"

#include <algorithm>
#include <charconv>

#include <boost/asio/dispatch.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "gateway/http/beast.hpp"
#include "gateway/http/content_headers.hpp"
#include "gateway/http/openapi_document.hpp"
#include "gateway/http/static_files.hpp"
#include "gateway/interpreter/events_session.hpp"
#include "gateway/interpreter/ndjson_stream.hpp"
#include "gateway/jupyter_api/websocket_session.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;

namespace {
constexpr auto request_timeout = std::chrono::seconds(60);
// After an answer sent without reading the request's body: how long the rest is read and
// dropped, so the client reads the answer instead of a connection reset.
constexpr auto linger_timeout = std::chrono::seconds(2);
}  // namespace

http_session::http_session(asio::ip::tcp::socket&& socket, gateway_services& services,
                           connection_limiter::slot slot)
    : stream_(std::move(socket)), services_(services), slot_(std::move(slot)) {}

void http_session::run() {
    // Interactive round trips must not wait for Nagle's algorithm (40 ms per message).
    beast::error_code ignored;
    stream_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&http_session::do_read, shared_from_this()));
}

void http_session::close() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
        if (self->answering_) {
            self->stopping_ = true;
            return;
        }
        beast::error_code ec;
        self->stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
        self->stream_.close();
    });
}

void http_session::do_read() {
    parser_.emplace();
    body_limit_ = services_.config.max_request_body_bytes;
    // Beast checks Content-Length against the limit while parsing the header: let the largest
    // limit through there, and apply the route's own in on_header.
    parser_->body_limit(std::max({body_limit_, services_.interpreter_rest.max_upload_bytes(),
                                  services_.mcp.max_body_bytes()}));
    parser_->header_limit(64 * 1024);
    // A connection that opens and sends nothing gets little time: idle sockets are what an
    // attacker holding every slot would use.
    if (first_request_)
        stream_.expires_after(services_.config.header_timeout);
    else
        stream_.expires_after(request_timeout);
    // The header first: file uploads have a larger body limit of their own.
    http::async_read_header(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&http_session::on_header, shared_from_this()));
}

void http_session::on_header(beast::error_code ec, std::size_t bytes) {
    if (ec) return on_read(ec, bytes);
    first_request_ = false;
    stream_.expires_after(request_timeout);
    const auto& req = parser_->get();
    keep_alive_ = req.keep_alive();  // an answer may be given before the body is read
    // Who sends it and where it goes are known from the header alone: nothing of the body is
    // read (or buffered, or acknowledged with 100 Continue) for a request that will be refused.
    route_ = match_route(req.method_string(), req.target(), !services_.config.web_root.empty());
    who_ = services_.auth.authenticate(req[http::field::authorization], route_.query);
    if (auto refusal = refuse_before_body()) return send(std::move(*refusal));

    if (route_.kind == route_kind::file_put || route_.kind == route_kind::files_upload)
        body_limit_ = services_.interpreter_rest.max_upload_bytes();
    else if (route_.kind == route_kind::mcp)
        body_limit_ = services_.mcp.max_body_bytes();  // upload_file's base64 content
    const auto length = parser_->content_length();
    if (length && *length > body_limit_) return on_read(http::error::body_limit, 0);
    parser_->body_limit(body_limit_);
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

std::optional<http_response> http_session::refuse_before_body() {
    if (is_public_route(route_.kind) || who_) return std::nullopt;
    switch (route_.kind) {
        // Unknown paths answer the same with or without a token (after the body, as before).
        case route_kind::not_found:
        case route_kind::bad_v1_path:
        case route_kind::method_not_allowed: return std::nullopt;
        // MCP hosts send bearer tokens and expect 401 with a challenge when it is wrong.
        case route_kind::mcp: return mcp::mcp_endpoint::unauthorized();
        default:
            return error_response(http::status::forbidden,
                                  "a valid token is required: 'Authorization: token T' or "
                                  "'?token=T'");
    }
}

void http_session::read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&http_session::on_read, shared_from_this()));
}

void http_session::on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) {
        stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
        return;
    }
    if (ec == http::error::body_limit) {
        auto res =
            error_response(http::status::payload_too_large,
                           "request body is larger than " + std::to_string(body_limit_) + " bytes");
        res.keep_alive(false);
        return send(std::move(res));
    }
    if (ec) {
        if (ec != beast::error::timeout && ec != asio::error::operation_aborted &&
            ec != asio::error::connection_reset && ec != asio::error::eof) {
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
    dispatch_request(parser_->release());
}

void http_session::dispatch_request(http_request req) {
    keep_alive_ = req.keep_alive();
    const route r = std::move(route_);
    if (r.kind == route_kind::not_found)
        return send(error_response(http::status::not_found, "not found"));
    if (r.kind == route_kind::bad_v1_path)
        return send(error_response(http::status::bad_request,
                                   "invalid path: empty, '.' and '..' segments, encoded '/' and "
                                   "NUL are refused"));
    if (r.kind == route_kind::method_not_allowed) {
        auto res = error_response(http::status::method_not_allowed, "method not allowed");
        res.set(http::field::allow, r.allow);
        return send(std::move(res));
    }
    // Refused in on_header when the route needs a token and it was missing or wrong.
    const std::optional<user> who = std::move(who_);
    if (r.kind == route_kind::mcp) {
        auto self = shared_from_this();
        return services_.mcp.handle(req, *who, [self](http_response res) {
            asio::dispatch(self->stream_.get_executor(),
                           [self, res = std::move(res)]() mutable { self->send(std::move(res)); });
        });
    }

    if (r.kind == route_kind::context_events) return upgrade_to_events(r, *who, std::move(req));
    if (is_interpreter_route(r.kind)) {
        auto self = shared_from_this();
        // Only a streamed execution takes the connection; it then closes after the stream.
        auto take_stream = [this] {
            auto stream =
                std::make_shared<interpreter::ndjson_stream>(std::move(stream_), std::move(slot_));
            services_.sessions.add(stream);
            return stream;
        };
        return services_.interpreter_rest.handle(
            r, std::move(req), *who,
            [self](http_response res) {
                asio::dispatch(
                    self->stream_.get_executor(),
                    [self, res = std::move(res)]() mutable { self->send(std::move(res)); });
            },
            take_stream);
    }

    switch (r.kind) {
        case route_kind::api_info:
            return send(json_response(http::status::ok,
                                      {{"version", CALLISTO_VERSION}, {"gateway", "callisto"}}));
        case route_kind::healthz: return send(json_response(http::status::ok, {{"status", "ok"}}));
        case route_kind::readyz: {
            auto report = services_.ready.check();
            return send(json_response(
                report.ready ? http::status::ok : http::status::service_unavailable, report.body));
        }
        case route_kind::openapi_document: {
            http_response res{http::status::ok, 11};
            res.set(http::field::content_type, "application/json");
            res.set(http::field::cache_control, "no-cache");
            res.body() = std::string(openapi_document());
            res.prepare_payload();
            return send(std::move(res));
        }
        case route_kind::kernelspecs_list:
        case route_kind::kernelspec_get:
        case route_kind::kernelspec_resource:
            return services_.kernelspecs_rest.handle(
                r, req, [this](http_response res) { send(std::move(res)); });
        case route_kind::kernel_channels: return upgrade_to_websocket(r, *who, std::move(req));
        case route_kind::static_file: {
            auto res =
                serve_file(services_.config.web_root, r.file.empty() ? "index.html" : r.file);
            set_web_ui_headers(res);
            return send(std::move(res));
        }
        default: {
            // Kernel handlers may answer later from another thread: hop back to this strand.
            auto self = shared_from_this();
            services_.kernels_rest.handle(r, req, *who, [self](http_response res) {
                asio::dispatch(
                    self->stream_.get_executor(),
                    [self, res = std::move(res)]() mutable { self->send(std::move(res)); });
            });
        }
    }
}

void http_session::upgrade_to_websocket(const route& r, const user& who, http_request req) {
    if (!beast::websocket::is_upgrade(req))
        return send(error_response(http::status::bad_request,
                                   "this endpoint speaks WebSocket only (Upgrade: websocket)"));
    // Only the owner, or an admin attaching to debug, reaches a kernel's channels.
    auto kernel =
        is_valid_kernel_id(r.kernel_id) ? services_.kernels.find_for(r.kernel_id, who) : nullptr;
    if (!kernel) return send(services_.kernels_rest.no_such_kernel(r.kernel_id, who));
    std::optional<std::uint64_t> since;
    if (auto text = query_param(r.query, "since"); !text.empty()) {
        std::uint64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size())
            return send(error_response(http::status::bad_request,
                                       "'since' must be a message sequence number"));
        since = value;
    }
    auto ws = std::make_shared<jupyter_api::websocket_session>(
        std::move(stream_), std::move(kernel), services_.config, services_.log, since,
        std::move(slot_));
    services_.sessions.add(ws);
    ws->run(std::move(req));
}

void http_session::upgrade_to_events(const route& r, const user& who, http_request req) {
    // The owner check first, as for the REST routes: others learn nothing, not even that it
    // speaks WebSocket.
    auto context = services_.interpreter_rest.find_context(r.context_id, who);
    if (!context)
        return send(
            error_response(http::status::not_found, "Context does not exist: " + r.context_id));
    if (!beast::websocket::is_upgrade(req))
        return send(error_response(http::status::bad_request,
                                   "this endpoint speaks WebSocket only (Upgrade: websocket)"));
    auto ws = std::make_shared<interpreter::events_session>(
        std::move(stream_), std::move(context), services_.interpreter_rest.settings(),
        services_.config, services_.log, std::move(slot_));
    services_.sessions.add(ws);
    ws->run(std::move(req));
}

void http_session::send(http_response res) {
    answering_ = true;  // also for answers given from on_header
    res.set(http::field::server, "callisto");
    // Every answer: no content sniffing, and a URL with ?token= never leaves as a Referer.
    res.set("X-Content-Type-Options", "nosniff");
    res.set("Referrer-Policy", "no-referrer");
    // An answer given before the body was read ends the connection: the rest of the body is
    // not a request.
    if (!keep_alive_ || stopping_ || !parser_->is_done()) res.keep_alive(false);
    auto shared = std::make_shared<http_response>(std::move(res));
    const bool keep_alive = shared->keep_alive();
    // The read's deadline may have passed while a long execution ran.
    stream_.expires_after(request_timeout);
    http::async_write(
        stream_, *shared,
        [self = shared_from_this(), shared, keep_alive](beast::error_code ec, std::size_t n) {
            self->on_write(keep_alive, ec, n);
        });
}

void http_session::on_write(bool keep_alive, beast::error_code ec, std::size_t) {
    answering_ = false;         // only now: a close() meanwhile must not cut the answer short
    body_reservation_.reset();  // the handler is done with the body
    if (ec) return;
    if (!keep_alive || stopping_) {
        stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
        // Closing with unread bytes makes the kernel send a reset, which can destroy the
        // answer before the client reads it (nginx's lingering close).
        if (!parser_->is_done()) {
            stream_.expires_after(linger_timeout);
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
