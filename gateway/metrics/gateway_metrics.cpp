#include "gateway/metrics/gateway_metrics.hpp"

#include <map>
#include <string>

namespace callisto::gateway {
namespace {

// A kernel's state as a label: what its process is doing, and for a running kernel whether
// it is busy or idle.
// A running kernel is counted as busy or idle.
std::string state_label(const kernels::kernel_session& k) {
    if (k.state() != kernels::kernel_state::running) return std::string(to_string(k.state()));
    return k.activity().execution_state == "busy" ? "busy" : "idle";
}

// Each kernelspec's warm pool: the kernels waiting in it (`ready`), or the number it keeps.
std::vector<metrics::sample> pool_samples(const kernels::kernel_manager& kernels, bool ready) {
    std::vector<metrics::sample> out;
    for (const auto& [name, level] : kernels.pool_levels())
        out.push_back({{name}, static_cast<double>(ready ? level.first : level.second)});
    return out;
}

}  // namespace

void register_gateway_metrics(metrics::registry& r, const kernels::kernel_manager& kernels,
                              const launcher::kernelspec_catalog& catalog,
                              const session_registry& sessions) {
    using metrics::metric_type;
    using metrics::sample;
    r.collected("callisto_build_info", "The running version of Callisto", metric_type::gauge,
                {"version"}, [] {
                    return std::vector<sample>{{{CALLISTO_VERSION}, 1}};
                });
    r.collected("callisto_kernels",
                "Kernels registered (in use, starting or kept for reuse), by kernelspec and "
                "state; pooled kernels are in callisto_pool_ready_kernels",
                metric_type::gauge, {"kernelspec", "state"}, [&kernels, &catalog] {
                    std::map<std::pair<std::string, std::string>, double> count;
                    // Zeros for every state of every kernelspec, so a dashboard's series exist.
                    for (const auto& spec : catalog.all())
                        for (const char* state :
                             {"starting", "idle", "busy", "restarting", "shutting_down", "dead"})
                            count[{spec.name, state}] = 0;
                    for (const auto& k : kernels.list())
                        count[{k->kernelspec_name(), state_label(*k)}] += 1;
                    std::vector<sample> out;
                    for (const auto& [key, n] : count) out.push_back({{key.first, key.second}, n});
                    return out;
                });
    r.collected("callisto_pool_ready_kernels", "Pre-started kernels waiting in the warm pool",
                metric_type::gauge, {"kernelspec"},
                [&kernels] { return pool_samples(kernels, true); });
    r.collected("callisto_pool_target_kernels", "Kernels the warm pool keeps ready (--pool-size)",
                metric_type::gauge, {"kernelspec"},
                [&kernels] { return pool_samples(kernels, false); });
    r.collected("callisto_open_connections",
                "Open client connections by kind: http, kernel_websocket, events_websocket, "
                "execution_stream",
                metric_type::gauge, {"kind"}, [&sessions] {
                    auto open = sessions.open_by_kind();
                    std::vector<sample> out;
                    for (const char* kind :
                         {"http", "kernel_websocket", "events_websocket", "execution_stream"})
                        out.push_back({{kind}, static_cast<double>(open[kind])});
                    return out;
                });
}

void register_state_metrics(metrics::registry& r, const kernels::kernel_record_store& kernels,
                            const interpreter::context_record_store& contexts) {
    r.collected("callisto_state_write_failures_total",
                "Records that could not be written to --state-dir (a full disk), by kind: "
                "those kernels and contexts would not survive a gateway restart",
                metrics::metric_type::counter, {"records"}, [&kernels, &contexts] {
                    return std::vector<metrics::sample>{
                        {{"kernels"}, static_cast<double>(kernels.failed_writes())},
                        {{"contexts"}, static_cast<double>(contexts.failed_writes())}};
                });
}

}  // namespace callisto::gateway
