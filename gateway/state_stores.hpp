#pragma once
// What the gateway keeps on disk for later: the records --state-dir keeps for the next start
// (kernels, live contexts, paused contexts, E2B sandboxes), under the state directory's lock, and
// the audit log (--audit-log) with its end for the executions WebSocket clients run. Each is null
// when its option is off.

#include <memory>

#include "common/directory_lock.hpp"
#include "common/logger.hpp"
#include "gateway/audit/audit_log.hpp"
#include "gateway/e2b/sandbox_record.hpp"
#include "gateway/interpreter/context_record.hpp"
#include "gateway/interpreter/paused_context.hpp"
#include "gateway/jupyter_api/execution_audit.hpp"
#include "gateway/kernels/records/kernel_record_store.hpp"
#include "gateway/server_config.hpp"

namespace callisto::gateway {

class state_stores {
public:
    // Opens them; throws when another live gateway holds the state directory, or when the
    // audit log cannot be opened or continued (with --audit-required: was cut short).
    state_stores(const server_config& config, const logger& log);
    ~state_stores();
    state_stores(const state_stores&) = delete;
    state_stores& operator=(const state_stores&) = delete;

    // Null without --state-dir: kernels and contexts then die with the gateway.
    kernels::kernel_record_store* kernel_records() const { return kernel_records_.get(); }
    interpreter::context_record_store* context_records() const { return context_records_.get(); }
    interpreter::paused_record_store* paused_records() const { return paused_records_.get(); }
    e2b::sandbox_record_store* sandbox_records() const { return sandbox_records_.get(); }
    // Null without --audit-log.
    audit::audit_log* audit() const { return audit_.get(); }
    jupyter_api::execution_audit* websocket_audit() const { return websocket_audit_.get(); }

private:
    // The lock first: one live gateway per state directory.
    std::unique_ptr<directory_lock> state_lock_;
    std::unique_ptr<kernels::kernel_record_store> kernel_records_;
    std::unique_ptr<interpreter::context_record_store> context_records_;
    std::unique_ptr<interpreter::paused_record_store> paused_records_;
    std::unique_ptr<e2b::sandbox_record_store> sandbox_records_;
    std::unique_ptr<audit::audit_log> audit_;
    std::unique_ptr<jupyter_api::execution_audit> websocket_audit_;
};

}  // namespace callisto::gateway
