#include "gateway/kernels/lifecycle/culling_policy.hpp"

namespace callisto::gateway::kernels {

namespace {
std::string seconds_text(std::chrono::seconds s) { return std::to_string(s.count()) + " s"; }
}  // namespace

std::optional<cull_decision> cull_reason(const kernel_activity& kernel, wall_clock::time_point now,
                                         const culling_policy& policy) {
    using std::chrono::duration_cast;
    using std::chrono::seconds;
    // A lifetime limit holds whatever the kernel is doing and whoever is attached.
    if (policy.max_lifetime.count() > 0 && now - kernel.started_at >= policy.max_lifetime)
        return cull_decision{
            "lifetime", "reached its maximum lifetime of " + seconds_text(policy.max_lifetime)};
    if (kernel.connections > 0 && !policy.cull_connected) return std::nullopt;
    if (kernel.execution_state == "busy") {
        if (policy.busy_timeout.count() > 0 && now - kernel.busy_since >= policy.busy_timeout)
            return cull_decision{"busy",
                                 "busy for " +
                                     seconds_text(duration_cast<seconds>(now - kernel.busy_since)) +
                                     " (limit " + seconds_text(policy.busy_timeout) + ")"};
        return std::nullopt;
    }
    if (kernel.execution_state != "idle" && kernel.execution_state != "dead") return std::nullopt;
    if (policy.idle_timeout.count() > 0 && now - kernel.last_activity >= policy.idle_timeout)
        return cull_decision{
            "idle", "idle for " + seconds_text(duration_cast<seconds>(now - kernel.last_activity)) +
                        " (limit " + seconds_text(policy.idle_timeout) + ")"};
    return std::nullopt;
}

}  // namespace callisto::gateway::kernels
