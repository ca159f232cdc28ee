#pragma once
// The body of POST /v1/contexts, parsed and checked. Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/kernels/lifecycle/kernel_policy.hpp"
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
    bool via_e2b = false;   // set by the E2B facade, never by a body
    // "network": {"allow": [...]}: what the context's kernel may reach through the egress
    // proxy, each rule in canonical form; empty: no network at all.
    std::vector<std::string> network_allow;
    // Set by the E2B facade, never by a body: the new context works in this context's files
    // (its kernel shares that kernel's sandbox: uid and workdir), as E2B's contexts of one
    // sandbox do; its kernel is started fresh and never kept.
    std::string share_files_with;
    // Set by the E2B facade: where its code starts, as a sandboxed kernel names it (E2B's
    // /home/user, or a cwd under it). Empty: the workdir, /work.
    std::string start_dir;
    // Set by the E2B facade: HOME for the code (E2B's /home/user). Empty: the kernel's own.
    std::string home;
};

// Why `asked` may not be had, naming the rules beyond the server's ceiling (--egress-allow)
// or beyond the user's own list (the users file's egress_allow, when it has one); nullopt
// when every rule is within both. The answer is a 403.
[[nodiscard]] std::optional<std::string> network_refusal(
    const std::vector<std::string>& asked, const std::vector<std::string>& server,
    const std::optional<std::vector<std::string>>& user);

// An empty body means all defaults. On error returns nullopt and a sentence in `error`.
std::optional<context_request> parse_context_request(std::string_view body, std::string& error);

}  // namespace callisto::gateway::interpreter
