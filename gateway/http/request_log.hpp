#pragma once
// What the HTTP server records of each request it answers: a line in the access log (at info,
// component "access") and its count by route and status for GET /metrics. The path is logged
// without its query string, which may hold a token; the body is never logged.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "common/logger.hpp"
#include "common/metrics.hpp"

namespace callisto::gateway {

class request_log {
public:
    request_log(metrics::registry& registry, logger log);

    // One answered request. status 101 for a connection a WebSocket took over. `location`: the
    // answer's Location header, if any, which names what the request created (a kernel, a
    // context, an execution, an uploaded file): logged after the size, so that what the
    // created thing logs later leads back to the request.
    // `route` is the route's name in the table (gateway/routes.cpp), or what matched none:
    // "not_found", "method_not_allowed", "bad_v1_path".
    void answered(std::string_view method, std::string_view target, std::string_view route,
                  int status, std::size_t body_bytes, std::chrono::steady_clock::duration took,
                  std::string_view user, std::string_view location = {});

private:
    metrics::counter_family& requests_;
    metrics::histogram_family& seconds_;
    logger log_;
};

// The request-target without its query string ("/api/kernels?token=x" -> "/api/kernels").
std::string_view path_of(std::string_view target);

}  // namespace callisto::gateway
