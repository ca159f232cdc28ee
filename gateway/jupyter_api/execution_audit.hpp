#pragma once
// The audit log's view of the Jupyter WebSocket: each request a client sends over a kernel's
// channels that runs code (an execute_request with its user_expressions, a debugger's
// evaluation: kernels/code_requests.hpp) gets a run line before the kernel has it, and with
// --audit-required is refused when that line cannot be written; its end line follows when
// the kernel replies (or dies first). The interpreter API records its own executions.

#include "common/logger.hpp"
#include "gateway/audit/audit_log.hpp"
#include "gateway/kernels/session/websocket_executions.hpp"

namespace callisto::gateway::jupyter_api {

class execution_audit final : public kernels::execution_observer {
public:
    execution_audit(audit::audit_log& log, logger diagnostics)
        : audit_(log), log_(std::move(diagnostics)) {}

    [[nodiscard]] std::string starting(kernels::websocket_execution& e) override;
    void finished(const kernels::websocket_execution& e) override;

private:
    audit::audit_log& audit_;
    logger log_;
};

}  // namespace callisto::gateway::jupyter_api
