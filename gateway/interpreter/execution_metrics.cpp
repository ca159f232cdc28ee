#include "gateway/interpreter/execution_metrics.hpp"

namespace callisto::gateway::interpreter {

execution::event_sink count_when_finished(kernels::kernel_metrics& metrics, std::string api) {
    return [&metrics, api = std::move(api)](const nlohmann::json& event, bool last) {
        if (!last) return;
        const auto& e = event["execution"];
        metrics.executions.with({api, e.value("status", "unknown")}).inc();
        metrics.execution_seconds.with({api}).observe(e.value("duration_ms", 0.0) / 1000);
        metrics.queue_wait_seconds.with({api}).observe(e.value("queue_ms", 0.0) / 1000);
        const auto& truncated = e["truncated"];
        if (truncated.value("stdout_bytes", 0) + truncated.value("stderr_bytes", 0) > 0)
            metrics.truncations.with({api, "stream"}).inc();
        if (!truncated["results"].empty()) metrics.truncations.with({api, "rich"}).inc();
    };
}

}  // namespace callisto::gateway::interpreter
