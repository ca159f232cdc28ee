#pragma once
// The body of POST /v1/contexts/{id}/executions, parsed and checked. Pure, so every bad form
// is unit-tested.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace callisto::gateway::interpreter {

struct execution_request {
    std::string code;
    std::optional<std::chrono::milliseconds> timeout;  // none: no deadline
    std::string idempotency_key;                        // empty: none
    bool stream = false;                                // NDJSON events instead of one answer
};

struct execution_request_limits {
    std::size_t max_code_bytes = 1 << 20;
    std::chrono::seconds max_timeout{24 * 3600};
    std::size_t max_key_bytes = 128;
};

// On error returns nullopt and a sentence for the client in `error`.
// `accept` is the Accept header: "application/x-ndjson" asks for the stream too.
std::optional<execution_request> parse_execution_request(std::string_view body,
                                                         std::string_view accept,
                                                         const execution_request_limits& limits,
                                                         std::string& error);

}  // namespace callisto::gateway::interpreter
