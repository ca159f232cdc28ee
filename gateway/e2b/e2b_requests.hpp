#pragma once
// The bodies the E2B SDKs send, parsed and checked: the control plane's (create, connect,
// setTimeout) and the code interpreter's (/execute, /contexts). Pure, so every bad form is
// unit-tested. Members the SDK sends that Callisto does not act on (mcp, autoPause,
// volumeMounts, …) are accepted and ignored, so an unchanged program still runs; members it
// acts on are checked for their type. A sandbox's network is honoured exactly or refused
// (docs/e2b.md, "Network"): a restriction silently dropped would be worse than a 400.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/interpreter/execution_env.hpp"
#include "gateway/languages/execution_language.hpp"

namespace callisto::gateway::e2b {

struct request_limits {
    std::size_t max_metadata_entries = 64;
    std::size_t max_metadata_bytes = 16 * 1024;  // keys and values together
    std::chrono::seconds max_timeout{24 * 3600};
    interpreter::env_limits env;
};

// POST /v2/sandboxes
struct create_sandbox_request {
    std::string template_id;  // empty: the SDK's default template
    std::map<std::string, std::string> metadata;
    interpreter::env_vars env;
    std::optional<std::chrono::seconds> timeout;
    // network.allowOut as Callisto's egress rules, in canonical form (what POST /v1/contexts
    // {"network": {"allow"}} takes); empty: no network, Callisto's default.
    std::vector<std::string> network_allow;
};
std::optional<create_sandbox_request> parse_create_sandbox(std::string_view body,
                                                           const request_limits& limits,
                                                           std::string& error);

// POST /sandboxes/{id}/timeout ({"timeout"} required) and POST /v2/sandboxes/{id}/connect
// ({"timeout"} optional): seconds, at least 0 and at most limits.max_timeout.
std::optional<std::chrono::seconds> parse_set_timeout(std::string_view body,
                                                      const request_limits& limits,
                                                      std::string& error);
// nullopt and an empty error: no timeout given.
std::optional<std::chrono::seconds> parse_connect(std::string_view body,
                                                  const request_limits& limits, std::string& error);

// POST /execute
struct execute_request {
    std::string code;
    std::string context_id;  // empty: the sandbox's default context
    std::optional<languages::execution_language> language;
    interpreter::env_vars env;
};
std::optional<execute_request> parse_execute(std::string_view body, const request_limits& limits,
                                             std::string& error);

// POST /contexts
struct create_context_request {
    std::optional<languages::execution_language> language;  // none: python
    std::string cwd;                                        // empty: the sandbox's home
};
std::optional<create_context_request> parse_create_context(std::string_view body,
                                                           std::string& error);

// E2B's language names ("python", "r", "bash"; "js" and "ts" Callisto runs nowhere).
std::optional<languages::execution_language> parse_e2b_language(std::string_view name);

}  // namespace callisto::gateway::e2b
