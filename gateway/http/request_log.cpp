#include "gateway/http/request_log.hpp"

#include <cstdio>

namespace callisto::gateway {

request_log::request_log(metrics::registry& registry, logger log)
    : requests_(registry.counters("callisto_http_requests_total",
                                  "HTTP requests answered, by route and status code (101: a "
                                  "WebSocket took the connection over)",
                                  {"route", "code"})),
      seconds_(registry.histograms("callisto_http_request_seconds",
                                   "From a request's header to its answer's header, by route",
                                   {"route"},
                                   {0.001, 0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 60, 300})),
      log_(std::move(log)) {}

void request_log::answered(std::string_view method, std::string_view target,
                           std::string_view route_name, int status, std::size_t body_bytes,
                           std::chrono::steady_clock::duration took, std::string_view user,
                           std::string_view location) {
    const std::string route(route_name);
    const double seconds = std::chrono::duration<double>(took).count();
    requests_.with({route, std::to_string(status)}).inc();
    seconds_.with({route}).observe(seconds);
    if (!log_.enabled(log_level::info)) return;
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", seconds * 1000);
    // The figures as fields too, for --log-format=json: a log query filters on them.
    auto line = log_.with("method", std::string(method))
                    .with("route", route)
                    .with("status", std::to_string(status))
                    .with("duration_ms", ms)
                    .with("bytes", std::to_string(body_bytes));
    if (!user.empty()) line = line.with("user", std::string(user));
    std::string text = std::string(method) + " " + std::string(path_of(target)) + " " +
                       std::to_string(status) + " " + std::to_string(body_bytes) + " B " + ms +
                       " ms";
    if (!location.empty()) text += " -> " + std::string(path_of(location));
    line.info(text);
}

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace callisto::gateway
