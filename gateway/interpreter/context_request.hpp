#pragma once
// The body of POST /v1/contexts, parsed and checked. Pure.

#include <optional>
#include <string>
#include <string_view>

namespace callisto::gateway::interpreter {

struct context_request {
    std::string kernel;  // kernelspec name; empty: the default
};

// An empty body means all defaults. On error returns nullopt and a sentence in `error`.
std::optional<context_request> parse_context_request(std::string_view body, std::string& error);

}  // namespace callisto::gateway::interpreter
