#pragma once
// GET /v1/whoami (any caller) and GET /v1/admin/overview (admins): who is signed in, and what
// an operator's console shows beside the kernel and context lists, which admins already get
// whole from /api/kernels and /v1/contexts: the warm pool, the kernels culled lately and why,
// the activity of the last hour, the latest executions the audit log recorded, each
// networked kernel's allowance and egress activity (a kernel not listed has no network), and
// the E2B sandboxes with their contexts.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gateway/admin/activity_history.hpp"
#include "gateway/audit/audit_log.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::admin {

// One networked kernel's allowance and egress activity (issue 36), as the composition root
// reads them from the kernels' egress proxies (gateway/kernel_egress.hpp).
struct kernel_network {
    std::string kernel_id;
    std::vector<std::string> allow;         // its rules, canonical
    std::uint64_t connections_allowed = 0;  // ended, by decision
    std::uint64_t connections_refused = 0;
    std::uint64_t connections_open = 0;
    std::uint64_t bytes_up = 0;  // kernel to destinations, so far
    std::uint64_t bytes_down = 0;
};
// Every networked kernel's; empty when none (or egress is off).
using network_source = std::function<std::vector<kernel_network>()>;

// One E2B sandbox (issue 35), as the composition root reads it from the E2B facade's
// registry (gateway/e2b/sandbox_registry.hpp): admin/ knows no e2b/.
struct e2b_sandbox {
    std::string id;
    std::string owner;
    std::string template_id;  // as the client named it
    std::string kernelspec;   // what it runs
    std::chrono::system_clock::time_point started_at;
    std::chrono::system_clock::time_point end_at;
    std::vector<std::string> context_ids;  // its interpreter contexts, the default first
    std::size_t commands = 0;              // its commands running now
};
// Every sandbox on the server; empty when there is none.
using sandbox_source = std::function<std::vector<e2b_sandbox>()>;

struct server_facts {
    std::string version;
    std::chrono::system_clock::time_point started_at;
    bool sandbox = false;
};

class admin_api {
public:
    // `audit` may be null (no --audit-log); `network` empty: egress is off (no
    // --egress-allow), and no kernel has network; `sandboxes` empty: no E2B facade.
    admin_api(const kernels::kernel_manager& kernels, const audit::audit_log* audit,
              const activity_history& history, server_facts facts, network_source network = {},
              sandbox_source sandboxes = {});

    // {"user": name, "admin": bool}
    http_response whoami(const user& who) const;
    // {"server", "pool", "culled", "history", "audit", "network", "sandboxes"}. Admins only: the
    // route table (gateway/routes.cpp) declares its route an admin's, so the dispatcher refuses
    // others 403.
    http_response overview() const;

    // How many culled kernels and audit lines an overview lists at most.
    static constexpr std::size_t latest_shown = 50;

private:
    const kernels::kernel_manager& kernels_;
    const audit::audit_log* audit_;
    const activity_history& history_;
    const server_facts facts_;
    const network_source network_;
    const sandbox_source sandboxes_;
};

}  // namespace callisto::gateway::admin
