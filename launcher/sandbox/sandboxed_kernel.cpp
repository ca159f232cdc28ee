#include "launcher/sandbox/sandboxed_kernel.hpp"

#include <unistd.h>
#include <csignal>

#include "common/byte_size.hpp"

namespace callisto::launcher {

sandboxed_kernel::sandboxed_kernel(spawn_description command, sandbox_layout layout,
                                   sandbox_policy policy, sandbox_identity who,
                                   std::shared_ptr<kernel_cgroup> cgroup, unique_fd seccomp_fd,
                                   unique_fd options_fd)
    : command_(std::move(command)),
      layout_(std::move(layout)),
      policy_(policy),
      who_(who),
      cgroup_(std::move(cgroup)),
      seccomp_fd_(std::move(seccomp_fd)),
      options_fd_(std::move(options_fd)) {
    if (!cgroup_) return;
    cgroup_->start_entered();
    oom_kills_before_ = cgroup_->oom_kills();
}

sandboxed_kernel::~sandboxed_kernel() {
    if (cgroup_) cgroup_->start_left();
}

void sandboxed_kernel::spawned() {
    seccomp_fd_.reset();
    options_fd_.reset();
}

bool sandboxed_kernel::killed_by_oom(const exit_status& status) const {
    // The OOM killer sends SIGKILL; an adopted process's status is not known. The count is
    // the cgroup's, which the sandbox's other kernels share: one that grew while this start
    // ran may be another's kill, but then this one did not end by SIGKILL on its own.
    const bool status_unknown = status.signal == 0 && status.exit_code == -1;
    return cgroup_ && (status.signal == SIGKILL || status_unknown) &&
           cgroup_->oom_kills() > oom_kills_before_;
}

exit_status sandboxed_kernel::judge(exit_status status) const {
    // bwrap's monitor, like a zygote fork's init, exits with 128+N when the kernel was
    // killed by signal N.
    if (status.signal == 0 && status.exit_code > 128 && status.exit_code < 128 + NSIG) {
        status.signal = status.exit_code - 128;
        status.exit_code = -1;
    }
    if (killed_by_oom(status)) {
        status.out_of_memory = true;
        status.verdict = "killed: out of memory (limit " + format_size(policy_.memory_bytes) + ")";
    } else if (status.signal == SIGXCPU) {
        status.verdict =
            "killed: CPU time limit exceeded (" + std::to_string(policy_.cpu_time_seconds) + " s)";
    } else if (status.signal == SIGXFSZ) {
        status.verdict =
            "killed: file size limit exceeded (" + format_size(policy_.file_size_bytes) + ")";
    }
    return status;
}

}  // namespace callisto::launcher
