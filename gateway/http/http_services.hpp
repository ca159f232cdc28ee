#pragma once
// What the listener and every HTTP session share: where requests go, and the limits on
// connections and request bodies. Owned by the server.

#include <chrono>

#include "common/logger.hpp"
#include "gateway/http/body_budget.hpp"
#include "gateway/http/connection_limiter.hpp"
#include "gateway/http/request_dispatcher.hpp"
#include "gateway/http/request_log.hpp"
#include "gateway/http/session_registry.hpp"

namespace callisto::gateway {

struct http_services {
    const request_dispatcher& dispatcher;
    connection_limiter& connections;
    body_budget& request_bodies;
    session_registry& sessions;
    request_log& requests;
    std::chrono::seconds header_timeout;  // a new connection's first request header
    logger log;
};

}  // namespace callisto::gateway
