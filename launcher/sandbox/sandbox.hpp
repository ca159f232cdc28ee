#pragma once
// The gateway-wide sandbox: bubblewrap, the compiled seccomp filter and the host's cgroups.
// It turns a kernel's spawn_description into a sandboxed_kernel whose command runs bwrap as
// the session's unprivileged uid, with bwrap building a user, pid, net (loopback only), ipc,
// uts, cgroup and mount namespace around the kernel.
//
// Why bwrap runs as the session uid (set by process_supervisor before execve) instead of as
// root: run by root, bwrap maps the sandbox uid back to host uid 0, so the kernel's files and
// signals would be root's outside the namespaces. Run by an unprivileged uid, bwrap uses an
// unprivileged user namespace (needs user.max_user_namespaces > 0) and everything the kernel
// does on the host is done as that uid.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/process/spawn_description.hpp"
#include "launcher/sandbox/cgroup_layout.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"
#include "launcher/sandbox/sandbox_policy.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"
#include "launcher/sandbox/seccomp_filter.hpp"

namespace callisto::launcher {

class kernel_cgroup;
class sandboxed_kernel;

class sandbox {
public:
    // Compiles the seccomp filter. Throws std::runtime_error. Sessions' cgroups are named
    // "<cgroup_tag>-<name>" (just <name> without a tag): the tag says whose they are, so the
    // next start reaps only its own (instance_lock, leftover_reaper).
    sandbox(std::filesystem::path bwrap, cgroup_layout cgroups, std::string cgroup_tag = {});

    // A session sandbox's cgroup with the policy's limits (null without cgroups); `name` is
    // unique per session. Throws std::runtime_error naming the file it could not write.
    std::shared_ptr<kernel_cgroup> make_cgroup(const std::string& name,
                                               const sandbox_policy& policy) const;
    // The cgroup `name` an earlier gateway made (null for "" or without cgroups). Throws
    // std::runtime_error when it is not there.
    std::shared_ptr<kernel_cgroup> adopt_cgroup(const std::string& name) const;

    // Prepares one kernel start in `cgroup` (make_cgroup's; null for none): writes its
    // passwd/group files into the runtime dir and hands the runtime dir and connection file
    // to the session uid. `inner` is the kernel command as kernel_command built it (host
    // paths). What of the host its argv[0] needs beyond /usr (a venv, a conda prefix:
    // interpreter_environment.hpp) is bound read-only at the same paths. Throws
    // std::runtime_error, naming the interpreter when it cannot be found.
    std::shared_ptr<sandboxed_kernel> prepare(
        const spawn_description& inner, const sandbox_policy& policy, const sandbox_identity& who,
        const std::filesystem::path& workdir, const std::filesystem::path& runtime_dir,
        const std::filesystem::path& connection_file, std::shared_ptr<kernel_cgroup> cgroup) const;

    // The judge of a kernel an earlier gateway started, in its adopted `cgroup` (or null).
    std::shared_ptr<sandboxed_kernel> adopt(const sandbox_policy& policy,
                                            const sandbox_identity& who,
                                            std::shared_ptr<kernel_cgroup> cgroup) const;

    // A command that runs `argv` as `who` in a sandbox like a kernel's (the same root and
    // `environment`, no network, no workdir, no seccomp filter or cgroup, a few rlimits), with
    // `env` and the sandbox's PATH: to try a kernelspec's interpreter at start
    // (run_brief_command).
    spawn_description trial(const std::vector<std::string>& argv,
                            const std::vector<std::filesystem::path>& environment,
                            const sandbox_identity& who,
                            const std::map<std::string, std::string>& env = {}) const;

    const cgroup_layout& cgroups() const { return cgroups_; }
    const std::filesystem::path& bwrap() const { return bwrap_; }

private:
    std::filesystem::path bwrap_;
    cgroup_layout cgroups_;
    std::string cgroup_tag_;
    seccomp_filter seccomp_;
};

}  // namespace callisto::launcher
