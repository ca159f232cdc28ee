#pragma once
// The route table: every route of the server declared once, in gateway/routes.cpp, with its
// methods, path template, access, body limit, admission and handler (an API's method). The
// matcher, the names in the access log and the metrics, the 405 Allow header, who needs a
// token and who an admin's all come from it. tests/gateway/openapi_tests.cpp checks it against
// docs/openapi.json both ways.

#include <cstddef>
#include <span>
#include <string>

#include "gateway/gateway_services.hpp"
#include "gateway/http/request_dispatcher.hpp"
#include "gateway/http/router.hpp"
#include "gateway/server_config.hpp"

namespace callisto::gateway {

// A route's body limit when it is not --max-request-body, and what sets it (said in a 413).
struct route_body_limit {
    std::size_t bytes = 0;
    std::string note;
};

// The shape of the errors a route's handler answers with: Callisto's {"reason", "message"}
// (MCP's JSON-RPC errors aside), or E2B's {"code", "message"}, which its SDKs read. The
// dispatcher's own refusals (401, 403, 413, 503) are Callisto's on every route.
// tests/gateway/openapi_tests.cpp holds docs/openapi.json's error bodies to it.
enum class route_errors { callisto, e2b };

// How a route differs from the others, when it does.
struct route_extras {
    // A larger body limit than the default.
    route_body_limit (*body)(const gateway_services&) = nullptr;
    // Refused 503 with Retry-After, before its body is read, while the host is past its
    // capacity (common/host_load.hpp): the routes that start new work.
    bool sheds_load = false;
    // The answer to a missing or wrong token, when the route's clients expect another.
    http_response (*unauthorized)() = nullptr;
    // Served only when this says so (the web UI's files: with --web-root).
    bool (*when)(const server_config&) = nullptr;
    // Open, whatever `access` says, when this says so (GET /metrics: --metrics-public).
    bool (*open_when)(const server_config&) = nullptr;
    route_errors errors = route_errors::callisto;
};

struct route_row {
    route_spec spec;  // name, methods, path, access, type (gateway/http/router.hpp)
    void (*handler)(gateway_services&, incoming_request);
    route_extras extras = {};
};

// Every route, in the order they are matched.
std::span<const route_row> route_table();

// The table's routes as the server with this configuration matches them.
router route_table_router(const server_config& config);

// Adds the table's routes, with their handlers, to the dispatcher.
void register_routes(request_dispatcher& dispatcher, gateway_services& services);

}  // namespace callisto::gateway
