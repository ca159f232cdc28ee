#pragma once
// The body of POST /v1/contexts, parsed and checked. Pure.

#include <optional>
#include <string>
#include <string_view>

#include "gateway/kernels/kernel_policy.hpp"
#include "gateway/languages/execution_language.hpp"

namespace callisto::gateway::interpreter {

struct context_request {
    std::string kernel;  // kernelspec name; empty: the default
    // With no kernel named: the kernel that runs this language (GET /v1/languages). A one-shot
    // execution's own "language" does the same.
    std::optional<languages::execution_language> language;
    std::optional<kernels::kernel_policy> policy;  // none: the server's --kernel-policy
    // POST /v1/contexts {"from_snapshot": ID}: the new context gets that snapshot's state.
    std::string from_snapshot;
    bool one_shot = false;  // set by POST /v1/executions, never by a body
    bool via_mcp = false;   // set by MCP's tools, never by a body
};

// An empty body means all defaults. On error returns nullopt and a sentence in `error`.
std::optional<context_request> parse_context_request(std::string_view body, std::string& error);

}  // namespace callisto::gateway::interpreter
