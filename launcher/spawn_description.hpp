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

namespace callisto::launcher {

struct resource_limit {
    int resource;        // RLIMIT_*
    unsigned long soft;  // RLIM_INFINITY for none
    unsigned long hard;
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
};

}  // namespace callisto::launcher
