#pragma once
// How long moving a process into a cgroup takes on this host. Every sandboxed kernel start
// makes one such move (bwrap's child, or a zygote's fork, joins the kernel's cgroups) and
// waits for it.
//
// A move takes the kernel's cgroup threadgroup lock for writing. Unless the host favours
// dynamic cgroup changes (cgroup2's `favordynmods` mount option, CONFIG_CGROUP_FAVOR_DYNMODS),
// taking it waits for an RCU grace period: on the build VM (Linux 6.18, cgroup v1) 7 ms a
// move, up to 24 ms, and 0.5 ms once favordynmods was set. The gateway measures it at start
// so that an operator sees the figure and the remedy (docs/operations.md, "Host tuning").

#include <chrono>
#include <string>

#include "launcher/sandbox/cgroup_layout.hpp"

namespace callisto::launcher {

struct cgroup_move_timing {
    double median_ms = 0;
    std::string error;  // why there is no figure (no cgroups, a failed mkdir or fork)
};

// Moves a short-lived child into <hierarchy>/<layout.parent>/<name> `samples` times, `gap`
// apart (a grace period started by one move would hide the next one's wait), then removes
// the directories. The child joins every hierarchy, as a kernel does.
cgroup_move_timing time_cgroup_move(const cgroup_layout& layout, const std::string& name,
                                    int samples = 3,
                                    std::chrono::milliseconds gap = std::chrono::milliseconds(40));

// Above this, the start-up log warns: a move that waits for a grace period.
inline constexpr double slow_cgroup_move_ms = 2.0;

}  // namespace callisto::launcher
