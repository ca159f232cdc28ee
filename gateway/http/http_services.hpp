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
#include "gateway/http/tls_context.hpp"

namespace callisto::gateway {

struct http_services {
    const request_dispatcher& dispatcher;
    connection_limiter& connections;
    body_budget& request_bodies;
    session_registry& sessions;
    request_log& requests;
    std::chrono::seconds header_timeout;  // a new connection's first request header (and TLS
                                          // handshake)
    logger log;
    const tls_context* tls = nullptr;  // HTTPS and WSS only; null: plain HTTP
};

}  // namespace callisto::gateway
