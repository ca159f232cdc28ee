#pragma once
// Which handler answers each route: the one place that knows both the HTTP server and the
// APIs behind it (Jupyter, /v1, MCP, the probes and the web UI). To add a route: its kind and
// path in gateway/http/router.{hpp,cpp}, its handler here, its description in
// docs/openapi.json.

#include "gateway/gateway_services.hpp"
#include "gateway/http/request_dispatcher.hpp"

namespace callisto::gateway {

void register_routes(request_dispatcher& dispatcher, gateway_services& services);

}  // namespace callisto::gateway
