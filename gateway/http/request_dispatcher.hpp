#pragma once
// Where a request goes, decided apart from the socket. On the header: its route, its sender,
// whether it is refused before any of its body is read, and how large that body may be. Once
// the body is in: the handler the composition root registered for the route (gateway/routes.cpp).
// No socket here, so every decision has a unit test; the HTTP session only does the I/O.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/http_message.hpp"
#include "gateway/http/incoming_request.hpp"
#include "gateway/http/router.hpp"
#include "gateway/user.hpp"
#include "gateway/user_directory.hpp"

namespace callisto::gateway {

struct header_verdict {
    route_match where;
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
    // The answer to a missing or wrong token, when the route's clients expect another than
    // the default 401 (MCP hosts want a JSON-RPC error body).
    std::function<http_response()> unauthorized = {};
    // Asked once the caller is known, before the body is read: an answer refuses the request
    // (new work on a host past its capacity, gateway/routes.cpp), nullopt lets it through.
    std::function<std::optional<http_response>()> admit = {};
};

class request_dispatcher {
public:
    using handler = std::function<void(incoming_request)>;

    // `default_body_limit_note` says what sets the default limit, for 413 answers.
    request_dispatcher(const user_directory& auth, std::size_t default_body_limit,
                       std::string default_body_limit_note);

    // Routes are matched in the order they are added (gateway/routes.cpp adds its table's).
    // Throws std::invalid_argument for a malformed route (router::add).
    void add(const route_spec& spec, handler h, route_options options = {});
    const router& routes() const { return router_; }

    // `websocket_offer` is the Sec-WebSocket-Protocol header, where a browser's WebSocket
    // may carry its token: read only when `websocket_upgrade` (the request asks for a
    // WebSocket), since no browser sends a token there otherwise and proxies log that header.
    header_verdict on_header(std::string_view method, std::string_view target,
                             std::string_view authorization, std::string_view websocket_offer = {},
                             bool websocket_upgrade = false) const;

    // Unknown paths, unsafe /v1 paths and wrong methods are answered here; the rest goes to
    // the route's handler.
    void dispatch(incoming_request in) const;

private:
    struct entry {
        handler run;
        route_options options;
    };
    const user_directory& auth_;
    const std::size_t default_body_limit_;
    const std::string default_body_limit_note_;
    router router_;
    std::vector<entry> entries_;  // by the router's index
};

// The 413 for a body over its route's limit: the limit in bytes and in a person's units, and
// what sets it. `length` is the body's declared size, when it has one (a chunked body has not).
http_response body_too_large(std::optional<std::uint64_t> length, std::size_t limit,
                             std::string_view note);

}  // namespace callisto::gateway
