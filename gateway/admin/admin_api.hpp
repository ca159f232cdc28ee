#pragma once
// GET /v1/whoami (any caller) and GET /v1/admin/overview (admins): who is signed in, and what
// an operator's console shows beside the kernel and context lists, which admins already get
// whole from /api/kernels and /v1/contexts: the warm pool, the kernels culled lately and why,
// the activity of the last hour, and the latest executions the audit log recorded.

#include <chrono>
#include <string>

#include "gateway/admin/activity_history.hpp"
#include "gateway/audit/audit_log.hpp"
#include "gateway/http/http_message.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::admin {

struct server_facts {
    std::string version;
    std::chrono::system_clock::time_point started_at;
    bool sandbox = false;
};

class admin_api {
public:
    // `audit` may be null (no --audit-log).
    admin_api(const kernels::kernel_manager& kernels, const audit::audit_log* audit,
              const activity_history& history, server_facts facts);

    // {"user": name, "admin": bool}
    http_response whoami(const user& who) const;
    // {"server", "pool", "culled", "history", "audit"}. Admins only: the route table
    // (gateway/routes.cpp) declares its route an admin's, so the dispatcher refuses others 403.
    http_response overview() const;

    // How many culled kernels and audit lines an overview lists at most.
    static constexpr std::size_t latest_shown = 50;

private:
    const kernels::kernel_manager& kernels_;
    const audit::audit_log* audit_;
    const activity_history& history_;
    const server_facts facts_;
};

}  // namespace callisto::gateway::admin
