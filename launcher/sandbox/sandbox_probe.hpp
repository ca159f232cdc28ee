#pragma once
// The start-up check: can this host sandbox kernels, and how? Runs bwrap once, for real, as
// an unprivileged uid with the namespaces the sandbox uses, and detects the cgroup version.
// The gateway logs the result and refuses to start when no safe mode exists.

#include <sys/types.h>
#include <filesystem>
#include <string>

#include "launcher/sandbox/cgroup_layout.hpp"

namespace callisto::launcher {

struct sandbox_probe {
    std::filesystem::path bwrap;
    bool privileged = false;       // root: can set per-session uids, mount quota tmpfs, cgroups
    bool user_namespaces = false;  // bwrap started a user+pid+net namespace as an unprivileged uid
    cgroup_layout cgroups;
    std::string failure;  // why the sandbox cannot work here; empty when usable

    bool usable() const { return failure.empty(); }

    // One line for the log: what is in force.
    std::string describe() const;

    // "" when a process of this effective uid may run the sandbox, else what it needs: root,
    // to give each session its own uid, cgroup and disk quota. Checked before the gateway
    // touches any directory, so that this, not a chmod's EPERM, is what a user reads.
    [[nodiscard]] static std::string privilege_problem(uid_t euid);

    // `test_uid`: an unprivileged uid to try bwrap as (the first of the sandbox range).
    static sandbox_probe run(const std::filesystem::path& bwrap, uid_t test_uid);

    // Kernels run as sandbox uids, which own none of the gateway's directories: every existing
    // directory down to `dir` (which may not exist yet) must be searchable by others, or bwrap
    // cannot reach a kernel's workdir or connection file. "" when it is, else which directory
    // stops them and its mode. `what` names the option ("--workdir-root").
    [[nodiscard]] static std::string unreachable_by_sandbox(const std::filesystem::path& dir,
                                                            const std::string& what);
};

}  // namespace callisto::launcher
