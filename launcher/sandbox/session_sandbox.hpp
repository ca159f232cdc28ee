#pragma once
// The sandbox state one kernel session keeps across restarts: its uid, its size-capped
// workdir and its limits (the gateway's, overridden by the kernelspec's
// metadata.callisto.limits). Each start gets a sandboxed_kernel from prepare().

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

class sandboxed_kernel;

class session_sandbox {
public:
    // Takes a uid from `uids` and creates <workdir_root>/<name>. Throws std::runtime_error
    // (no uid left, bad kernelspec limits, workdir not creatable).
    session_sandbox(const sandbox& box, sandbox_uid_pool& uids,
                    const std::filesystem::path& workdir_root, const std::string& name,
                    const sandbox_policy& defaults, const kernelspec& spec);
    // Takes over the sandbox of a kernel an earlier gateway started: its uid (taken from
    // `uids`) and its workdir. Throws std::runtime_error when the uid is not free.
    session_sandbox(adopt_existing_t, const sandbox& box, sandbox_uid_pool& uids,
                    std::filesystem::path workdir, uid_t uid, const sandbox_policy& defaults,
                    const kernelspec& spec);
    ~session_sandbox();  // removes the workdir, returns the uid
    session_sandbox(const session_sandbox&) = delete;
    session_sandbox& operator=(const session_sandbox&) = delete;

    // One start of the kernel `inner` (kernel_command's output) with its runtime dir.
    std::shared_ptr<sandboxed_kernel> prepare(const spawn_description& inner,
                                              const kernel_runtime_dir& runtime) const;

    const sandbox_identity& identity() const { return who_; }
    const sandbox_policy& policy() const { return policy_; }
    const std::filesystem::path& workdir() const { return workdir_->path(); }

private:
    const sandbox& box_;
    sandbox_uid_pool& uids_;
    sandbox_policy policy_;
    sandbox_identity who_;
    std::unique_ptr<session_workdir> workdir_;
};

}  // namespace callisto::launcher
