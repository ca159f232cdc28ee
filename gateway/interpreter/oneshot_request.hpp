#pragma once
// The body of POST /v1/executions: an execution request plus the context fields ("kernel",
// "policy") of the throw-away or kept-kernel context it runs in. Pure.

#include <optional>
#include <string>
#include <string_view>

#include "gateway/interpreter/context_request.hpp"
#include "gateway/interpreter/execution_request.hpp"

namespace callisto::gateway::interpreter {

struct oneshot_request {
    context_request context;
    execution_request execution;
};

// On error returns nullopt and a sentence for the client in `error`.
std::optional<oneshot_request> parse_oneshot_request(std::string_view body, std::string_view accept,
                                                     const execution_request_limits& limits,
                                                     std::string& error);

}  // namespace callisto::gateway::interpreter
