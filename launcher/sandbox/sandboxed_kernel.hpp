#pragma once
// One sandboxed kernel start: the bwrap command line, its place in the session sandbox's
// cgroup, the descriptors bwrap reads (its options, the seccomp program), and the verdict on
// its exit ("killed: out of memory (limit 2GiB)").

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/unique_fd.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/process/spawn_description.hpp"
#include "launcher/sandbox/kernel_cgroup.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"
#include "launcher/sandbox/sandbox_policy.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"

namespace callisto::launcher {

class sandboxed_kernel {
public:
    sandboxed_kernel(spawn_description command, sandbox_layout layout, sandbox_policy policy,
                     sandbox_identity who, std::shared_ptr<kernel_cgroup> cgroup,
                     unique_fd seccomp_fd, unique_fd options_fd);
    ~sandboxed_kernel();  // closes the descriptors if still open, leaves the cgroup
    sandboxed_kernel(const sandboxed_kernel&) = delete;
    sandboxed_kernel& operator=(const sandboxed_kernel&) = delete;

    // What process_supervisor::spawn runs.
    const spawn_description& command() const { return command_; }
    // What a zygote's fork builds instead of bwrap's namespaces and mounts.
    const sandbox_layout& layout() const { return layout_; }

    // The child has its copies of the descriptors (or the spawn failed): close ours.
    void spawned();

    // The exit as the user should hear it: bwrap reports a kernel killed by signal N as exit
    // code 128+N, which is turned back into the signal, and OOM kills, CPU-time and file-size
    // limits are named with their limit.
    exit_status judge(exit_status status) const;

    const sandbox_identity& identity() const { return who_; }
    std::string cgroup_name() const { return cgroup_ ? cgroup_->name() : ""; }

private:
    // Killed by SIGKILL (or ended unseen) while the cgroup's OOM kill count grew.
    bool killed_by_oom(const exit_status& status) const;

    spawn_description command_;
    sandbox_layout layout_;
    sandbox_policy policy_;
    sandbox_identity who_;
    std::shared_ptr<kernel_cgroup> cgroup_;  // the session sandbox's, or null
    std::uint64_t oom_kills_before_ = 0;
    unique_fd seccomp_fd_;
    unique_fd options_fd_;  // bwrap's options (--args)
};

}  // namespace callisto::launcher
