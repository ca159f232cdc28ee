#pragma once
// One request, read, as its handler gets it: the route it matched (with the path's parameters),
// the request, its sender and the ways to answer. Handlers are the APIs' methods, registered
// against the routes of the table in gateway/routes.cpp.

#include <functional>
#include <optional>

#include "gateway/http/client_stream.hpp"
#include "gateway/http/connection_limiter.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/http/router.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway {

// A connection a handler takes over (a WebSocket upgrade, a streamed answer), with its place
// under the connection limits.
struct taken_connection {
    client_stream stream;
    connection_limiter::slot slot;
};

struct incoming_request {
    route_match where;  // found: its path parameters are where.param("name")
    http_request req;
    std::optional<user> who;  // set on every route that needs a token
    respond_fn respond;       // from any thread: the answer goes back through the session
    // For upgrades and streams: the session lets go of its connection. On the session's
    // strand only, before `respond` was called.
    std::function<taken_connection()> take_connection;
    // Like respond, for an answer read from a file as it is sent.
    respond_file_fn respond_file;
};

}  // namespace callisto::gateway
