#pragma once
// Everything needed to start one process. This is the seam the sandbox wraps: a sandbox turns
// one spawn_description into another (prefixing bwrap and its arguments) and adds limits,
// an identity and a cgroup, which process_supervisor applies in the child before execve.

#include <sys/types.h>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/sandbox/sandbox_layout.hpp"

namespace callisto::launcher {

struct resource_limit {
    int resource;        // RLIMIT_*
    unsigned long soft;  // RLIM_INFINITY for none
    unsigned long hard;
};

// The same start as a fork of the kernelspec's zygote (zygote_pool) instead of an exec of argv:
// the kernel's own command, and the layout the fork's jail builds in place of bwrap's when
// sandboxed. The identity, limits, cgroups, environment and output of the spawn_description
// apply as they are.
struct zygote_fork {
    std::string kernelspec;
    std::vector<std::string> argv;         // e.g. python3 -m ipykernel_launcher -f <file>
    std::filesystem::path cwd;             // unsandboxed only; a jail starts in sandbox_workdir
    std::optional<sandbox_layout> layout;  // none: no sandbox
};

struct spawn_description {
    std::vector<std::string> argv;           // argv[0] is an absolute path or found on PATH of env
    std::map<std::string, std::string> env;  // the complete environment (nothing inherited)
    std::filesystem::path cwd;               // empty: inherit

    // Applied in the child, in this order: join cgroups (needs root), rlimits (root may raise
    // hard limits), then drop to uid/gid with no supplementary groups. Empty: unchanged.
    std::vector<std::filesystem::path> cgroup_procs_files;  // "0" is written to each
    std::vector<resource_limit> rlimits;
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;

    // Descriptors the child keeps (without CLOEXEC) at the same numbers, e.g. bwrap's
    // --seccomp FD. Every other descriptor above 2 is closed.
    std::vector<int> inherit_fds;
    // The child's stdout and stderr (e.g. a pipe the gateway reads and logs); -1: the
    // gateway's own.
    int output_fd = -1;

    // Set when a zygote may fork this process; argv is the fallback when none can.
    std::optional<zygote_fork> zygote;

    // False: the process is killed when the gateway dies (PR_SET_PDEATHSIG, bwrap's
    // --die-with-parent). True: it lives on for the next gateway to adopt (--state-dir); the
    // gateway then stops it itself, and a sandbox's cgroup catches what outlives bwrap.
    bool outlive_gateway = false;
};

}  // namespace callisto::launcher
