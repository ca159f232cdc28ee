#pragma once
// Where the host's cgroup controllers are, as detected at start-up. v2 when the unified
// hierarchy offers memory, pids and cpu; else v1 when those three controllers are mounted
// (as on these build machines); else none, and the sandbox relies on rlimits alone.

#include <filesystem>
#include <string>
#include <vector>

namespace callisto::launcher {

enum class cgroup_version { none, v1, v2 };

struct cgroup_layout {
    cgroup_version version = cgroup_version::none;
    std::filesystem::path v2_root;    // the cgroup2 mount, for v2
    std::filesystem::path v1_memory;  // each controller's mount, for v1
    std::filesystem::path v1_pids;
    std::filesystem::path v1_cpu;
    std::string parent = "callisto";  // kernels' cgroups are <hierarchy>/<parent>/<name>

    // Reads /proc/self/mountinfo and each candidate's controller list.
    static cgroup_layout detect();

    std::string describe() const;  // "cgroup v1 (memory, pids, cpu)", "no cgroups"

    // Each hierarchy a kernel's cgroups live in, once: the v2 root, or the v1 mounts (two
    // controllers may share one). Empty without cgroups.
    std::vector<std::filesystem::path> hierarchies() const;
};

}  // namespace callisto::launcher
