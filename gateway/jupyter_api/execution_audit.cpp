#include "gateway/jupyter_api/execution_audit.hpp"

namespace callisto::gateway::jupyter_api {

std::string execution_audit::starting(kernels::websocket_execution& e) {
    audit::execution_start start;
    start.started = e.started;
    start.user = e.user;
    start.api = "jupyter";
    start.kernel_id = e.kernel_id;
    start.execution_id = e.msg_id;
    if (e.kind != "execute_request") start.request = e.kind;
    start.code = e.code;
    start.user_expressions = &e.user_expressions;
    auto r = audit_.record_start(start);
    if (r.error.empty()) {
        e.record_seq = r.seq;
        return {};
    }
    if (audit_.settings().required) return r.error;
    log_.with("kernel_id", e.kernel_id)
        .error(e.kind + " " + e.msg_id + " runs unrecorded (--audit-required=off): " + r.error);
    return {};
}

void execution_audit::finished(const kernels::websocket_execution& e) {
    audit::execution_end end;
    end.finished = e.started + e.duration;
    end.user = e.user;
    end.api = "jupyter";
    end.execution_id = e.msg_id;
    end.run_seq = e.record_seq;
    end.status = e.status;
    end.duration = e.duration;
    end.output_bytes = e.output_bytes;
    if (auto why = audit_.record_end(end); !why.empty())
        log_.with("kernel_id", e.kernel_id)
            .error(e.kind + " " + e.msg_id + " ended, but its end could not be recorded: " + why);
}

}  // namespace callisto::gateway::jupyter_api
