#pragma once
// Entering a running kernel's sandbox from outside, as `docker exec` enters a container: for
// callisto-enter (enter_main.cpp), which runs E2B's commands (gateway/e2b/sandbox_process.hpp)
// as processes of their own beside the kernel. What confines the kernel is read from the host's
// /proc as root, before anything changes: its sandbox's namespaces, its cgroups, its rlimits,
// its uid and gid. The seccomp filter and the dropped capabilities are applied by the caller
// (kernel_jail.hpp's become_unprivileged and confine), from the same seccomp_filter the
// kernel's spawn used.

#include <sys/types.h>

#include <filesystem>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "launcher/process/spawn_description.hpp"

namespace callisto::launcher::zygote {

// What one process of a sandbox is confined by.
struct sandbox_member {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<resource_limit> rlimits;
    // cgroup.procs of each hierarchy where the member's cgroup is not the caller's.
    std::vector<std::filesystem::path> cgroup_procs_files;
    // Its namespaces, opened, in the order they are joined: ipc, uts, net, cgroup, pid, mnt
    // (its root becomes ours), then user when it is not the caller's.
    std::vector<unique_fd> namespaces;
};

// The parsers behind read_sandbox_of, pure for their tests. Each reads the text of one /proc
// file of the sandbox's pid 1; what the sandbox does not set is refused, not guessed.

// /proc/P/status: the real uid and gid ("Uid:\tREAL\tEFFECTIVE…"); nullopt without both.
std::optional<std::pair<uid_t, gid_t>> parse_status_ids(std::istream& status);

// /proc/P/limits: the soft and hard values of the limits a sandbox sets (cpu, file size, data,
// stack, core, processes, open files, locked memory, address space). Throws
// std::runtime_error when one of them is missing or not a number.
std::vector<resource_limit> parse_limits(std::istream& limits);

// /proc/P/cgroup: "ID:controllers" -> the cgroup's path, one entry per hierarchy.
std::map<std::string, std::string> parse_cgroups(std::istream& cgroup);

// Where the hierarchy with that ID and controller list is mounted: cgroup v1's
// /sys/fs/cgroup/<controllers> (a named one, "name=systemd", at its name), v2's (ID 0) at
// /sys/fs/cgroup/unified when v1 controllers are mounted beside it, else /sys/fs/cgroup.
std::filesystem::path hierarchy_mount(const std::string& id, const std::string& controllers,
                                      bool v2_beside_v1);

// The sandbox behind a kernel's host pid: the pid itself when it is the first process of a pid
// namespace (a zygote jail's pid 1), else the first of its descendants that is (bwrap's pid 1
// in the sandbox, below the bwrap the gateway started). Throws std::runtime_error when there
// is none: the kernel is not sandboxed, and nothing may run beside it that way.
sandbox_member read_sandbox_of(pid_t kernel_pid);

// Joins the member's cgroups, takes its rlimits, clears the supplementary groups, joins its
// namespaces and changes into `cwd` (a path inside the sandbox). Still root (or all
// capabilities in the sandbox's user namespace): the caller drops them. Throws
// std::system_error naming the step that failed.
void enter_sandbox(const sandbox_member& member, const std::string& cwd);

}  // namespace callisto::launcher::zygote
