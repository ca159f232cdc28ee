#include "gateway/jupyter_api/execution_audit.hpp"

namespace callisto::gateway::jupyter_api {

std::string execution_audit::refuse_reason() {
    return audit_.settings().required ? audit_.refuse_reason() : std::string();
}

void execution_audit::finished(const kernels::websocket_execution& e) {
    audit::execution_entry entry;
    entry.started = e.started;
    entry.user = e.user;
    entry.api = "jupyter";
    entry.kernel_id = e.kernel_id;
    entry.execution_id = e.msg_id;
    if (e.kind != "execute_request") entry.request = e.kind;
    entry.code = e.code;
    entry.user_expressions = e.user_expressions;
    entry.status = e.status;
    entry.duration = e.duration;
    entry.output_bytes = e.output_bytes;
    if (auto why = audit_.record(entry); !why.empty())
        log_.with("kernel_id", e.kernel_id)
            .error("execute_request " + e.msg_id + " ran but could not be recorded: " + why);
}

}  // namespace callisto::gateway::jupyter_api
