#pragma once
// The sandbox state one kernel session keeps across restarts: its uid, its size-capped
// workdir, its cgroup and its limits (the gateway's, overridden by the kernelspec's
// metadata.callisto.limits). Each start gets a sandboxed_kernel from prepare(). Kernels that
// share it (kernel_process::share_sandbox) share all of that: one uid, one tree of files and
// one set of limits for them all.

#include <filesystem>
#include <memory>
#include <string>

#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/kernel_runtime_dir.hpp"
#include "launcher/process/spawn_description.hpp"
#include "launcher/sandbox/sandbox.hpp"
#include "launcher/sandbox/sandbox_policy.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"
#include "launcher/sandbox/session_workdir.hpp"

namespace callisto::launcher {

class kernel_cgroup;
class sandboxed_kernel;

class session_sandbox {
public:
    // Takes a uid from `uids`, creates <workdir_root>/<name> and the cgroup. Throws
    // std::runtime_error (no uid left, bad kernelspec limits, workdir or cgroup not creatable).
    session_sandbox(const sandbox& box, sandbox_uid_pool& uids,
                    const std::filesystem::path& workdir_root, const std::string& name,
                    const sandbox_policy& defaults, const kernelspec& spec);
    // Takes over the sandbox of a kernel an earlier gateway started: its uid (taken from
    // `uids`), its workdir and its cgroup ("" for none). Throws std::runtime_error when the uid
    // is not free or the cgroup is gone.
    session_sandbox(adopt_existing_t, const sandbox& box, sandbox_uid_pool& uids,
                    std::filesystem::path workdir, uid_t uid, const std::string& cgroup_name,
                    const sandbox_policy& defaults, const kernelspec& spec);
    // Kills what is left in the cgroup, removes it and the workdir, returns the uid.
    ~session_sandbox();
    session_sandbox(const session_sandbox&) = delete;
    session_sandbox& operator=(const session_sandbox&) = delete;

    // One start of the kernel `inner` (kernel_command's output) with its runtime dir.
    std::shared_ptr<sandboxed_kernel> prepare(const spawn_description& inner,
                                              const kernel_runtime_dir& runtime) const;
    // The start an earlier gateway made, which the adopting constructor took over.
    std::shared_ptr<sandboxed_kernel> adopt_running() const;

    const sandbox_identity& identity() const { return who_; }
    const sandbox_policy& policy() const { return policy_; }
    const std::filesystem::path& workdir() const { return workdir_->path(); }
    std::string cgroup_name() const;  // "" without cgroups

private:
    const sandbox& box_;
    sandbox_uid_pool& uids_;
    sandbox_policy policy_;
    sandbox_identity who_;
    std::unique_ptr<session_workdir> workdir_;
    std::shared_ptr<kernel_cgroup> cgroup_;  // null without cgroups
};

}  // namespace callisto::launcher
