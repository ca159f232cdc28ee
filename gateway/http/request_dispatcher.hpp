#pragma once
// Where a request goes, decided apart from the socket. On the header: its route, its sender,
// whether it is refused before any of its body is read, and how large that body may be. Once
// the body is in: the handler the composition root registered for the route (gateway/routes.cpp).
// No socket here, so every decision has a unit test; the HTTP session only does the I/O.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/http/client_stream.hpp"
#include "gateway/http/connection_limiter.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/http/router.hpp"
#include "gateway/user.hpp"
#include "gateway/user_directory.hpp"

namespace callisto::gateway {

// A connection a handler takes over (a WebSocket upgrade, a streamed answer), with its place
// under the connection limits.
struct taken_connection {
    client_stream stream;
    connection_limiter::slot slot;
};

// One request, read, as its handler gets it.
struct incoming_request {
    route where;
    http_request req;
    std::optional<user> who;  // set on every route that needs a token
    respond_fn respond;       // from any thread: the answer goes back through the session
    // For upgrades and streams: the session lets go of its connection. On the session's
    // strand only, before `respond` was called.
    std::function<taken_connection()> take_connection;
    // Like respond, for an answer read from a file as it is sent.
    respond_file_fn respond_file;
};

struct header_verdict {
    route where;
    std::optional<user> who;
    std::optional<http_response> refusal;  // answer this now; read nothing of the body
    std::size_t body_limit = 0;
    std::string_view body_limit_note;  // what sets body_limit (route_options::body_limit_note)
};

// How a route differs from the others, when it does.
struct route_options {
    std::size_t body_limit = 0;  // 0: the default request body limit
    // What a 413 says sets body_limit, so a client knows what to change: "set by
    // --upload-limit". Empty: the default limit's note.
    std::string body_limit_note = {};
    // The answer to a missing or wrong token, when the route's clients expect another
    // than 403 (MCP hosts want 401 with a challenge).
    std::function<http_response()> unauthorized = {};
    // Answered without a token (GET /metrics with --metrics-public).
    bool without_token = false;
    // Asked once the caller is known, before the body is read: an answer refuses the request
    // (new work on a host past its capacity, gateway/routes.cpp), nullopt lets it through.
    std::function<std::optional<http_response>()> admit = {};
};

class request_dispatcher {
public:
    using handler = std::function<void(incoming_request)>;

    // `default_body_limit_note` says what sets the default limit, for 413 answers.
    request_dispatcher(const user_directory& auth, bool serves_web_root,
                       std::size_t default_body_limit, std::string default_body_limit_note);

    void handle(route_kind kind, handler h, route_options options = {});

    // `websocket_offer` is the Sec-WebSocket-Protocol header, where a browser's WebSocket
    // may carry its token: read only when `websocket_upgrade` (the request asks for a
    // WebSocket), since no browser sends a token there otherwise and proxies log that header.
    header_verdict on_header(std::string_view method, std::string_view target,
                             std::string_view authorization, std::string_view websocket_offer = {},
                             bool websocket_upgrade = false) const;

    // Unknown paths, unsafe /v1 paths and wrong methods are answered here; the rest goes to
    // the route's handler (a route without one answers 404).
    void dispatch(incoming_request in) const;

private:
    struct entry {
        handler run;
        route_options options;
    };
    const user_directory& auth_;
    const bool serves_web_root_;
    const std::size_t default_body_limit_;
    const std::string default_body_limit_note_;
    std::array<entry, static_cast<std::size_t>(route_kind::route_kind_count)> routes_;
};

// The 413 for a body over its route's limit: the limit in bytes and in a person's units, and
// what sets it. `length` is the body's declared size, when it has one (a chunked body has not).
http_response body_too_large(std::optional<std::uint64_t> length, std::size_t limit,
                             std::string_view note);

}  // namespace callisto::gateway
