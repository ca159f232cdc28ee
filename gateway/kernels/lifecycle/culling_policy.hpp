#pragma once
// When a kernel should go. Pure: the decision takes a snapshot and "now", so every rule is
// unit-tested without sleeping, with jupyter_server's semantics where it has them
// (cull_idle_timeout, cull_busy, cull_connected) plus a separate busy timeout and a maximum
// lifetime.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace callisto::gateway::kernels {

using wall_clock = std::chrono::system_clock;

struct culling_policy {
    std::chrono::seconds idle_timeout{0};  // 0: idle kernels are kept
    std::chrono::seconds busy_timeout{0};  // 0: a busy kernel is never culled for being busy
    std::chrono::seconds max_lifetime{0};  // 0: no limit
    bool cull_connected = false;           // may a kernel with open WebSockets be culled?
    std::chrono::seconds interval{60};     // how often the rules are checked
    std::chrono::seconds retention{3600};  // how long a culled id answers 410 Gone

    bool enabled() const {
        return idle_timeout.count() > 0 || busy_timeout.count() > 0 || max_lifetime.count() > 0;
    }
};

struct kernel_activity {
    std::string execution_state;  // "idle", "busy", "starting", "dead", ...
    wall_clock::time_point last_activity;
    wall_clock::time_point busy_since;  // meaningful while busy
    wall_clock::time_point started_at;
    std::size_t connections = 0;
};

// Why a kernel goes: the rule that took it ("idle", "busy" or "lifetime", a metric label) and a
// sentence for the client ("idle for 600 s").
struct cull_decision {
    std::string rule;
    std::string reason;
};

// nullopt: keep the kernel.
std::optional<cull_decision> cull_reason(const kernel_activity& kernel, wall_clock::time_point now,
                                         const culling_policy& policy);

}  // namespace callisto::gateway::kernels
