#pragma once
// The body of POST /v1/contexts/{id}/executions, parsed and checked. Pure, so every bad form
// is unit-tested.

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "gateway/interpreter/execution_env.hpp"
#include "gateway/languages/execution_language.hpp"

namespace callisto::gateway::interpreter {

struct execution_request {
    std::string code;
    // none: the kernel's own language; else one the context's kernel runs (its own, or bash
    // and sql in a Python kernel).
    std::optional<languages::execution_language> language;
    // The request's, else the server's default; none only where the server has no default
    // (--execution-timeout=0).
    std::optional<std::chrono::milliseconds> timeout;
    std::string idempotency_key;  // empty: none
    bool stream = false;          // NDJSON events instead of one answer
    env_vars env;                 // set for this execution only, then restored
    std::string api = "v1";       // who asked: "v1" or "mcp" (for the audit log)
    bool keep_ansi = false;       // tracebacks with their ANSI colour codes
    // The kernel's descriptions of DataFrames and figures (result_descriptions.hpp) asked for
    // and kept in the results: E2B's executions, for its `data` and `chart`.
    bool keep_result_descriptions = false;
    // Text kept per stream (head and tail), when the client wants less than the server's
    // --output-budget: an agent sizes it to its model's context.
    std::optional<std::size_t> output_budget;
};

struct execution_request_limits {
    std::size_t max_code_bytes = 1 << 20;
    // --execution-timeout: the deadline of a request that names none (0: none);
    // --max-execution-timeout: the most a request may ask for.
    std::chrono::seconds default_timeout{600};
    std::chrono::seconds max_timeout{24 * 3600};
    std::size_t max_key_bytes = 128;
    // 'output_budget' may ask for min_output_budget up to the server's --output-budget.
    std::size_t min_output_budget = 256;
    std::size_t max_output_budget = 1 << 20;
    env_limits env;
};

// "'python', 'r', 'bash' or 'sql'": the languages a request may name, for error messages.
std::string language_choices();

// Why `code` cannot be sent to a kernel, naming it as `field` ("'code'"), or nullopt. A NUL
// byte: ipykernel fails on it without an execute_reply (Python compiles no source holding
// one), so its execution would never end.
[[nodiscard]] std::optional<std::string> check_code(std::string_view code, std::string_view field);

// On error returns nullopt and a sentence for the client in `error`.
// `accept` is the Accept header: "application/x-ndjson" asks for the stream too.
std::optional<execution_request> parse_execution_request(std::string_view body,
                                                         std::string_view accept,
                                                         const execution_request_limits& limits,
                                                         std::string& error);

// The same fields from a parsed JSON object; members named in `also_allowed` are skipped
// instead of refused as unknown (the WebSocket's "type", for instance).
std::optional<execution_request> execution_request_from_json(
    const nlohmann::json& doc, std::string_view accept, const execution_request_limits& limits,
    std::string& error, std::initializer_list<std::string_view> also_allowed = {});

}  // namespace callisto::gateway::interpreter
