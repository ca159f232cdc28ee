#pragma once
// One sandboxed start as the gateway prepares it, for the sandbox's and the zygote's tests:
// a workdir, a runtime dir, and the sandboxed_kernel the sandbox made for a command (bwrap's
// command line, and the layout a zygote's fork builds instead).

#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "launcher/kernel_runtime_dir.hpp"
#include "launcher/sandbox.hpp"
#include "launcher/sandboxed_kernel.hpp"
#include "launcher/session_workdir.hpp"
#include "test_support.hpp"

namespace callisto::launcher::test {

// A temp dir the sandbox uid may traverse (mkdtemp makes it 0700).
struct open_temp_dir : temp_dir {
    open_temp_dir() { ::chmod(path().c_str(), 0755); }
};

struct sandbox_start {
    open_temp_dir root;
    open_temp_dir runtime_root;
    std::unique_ptr<session_workdir> workdir;
    std::unique_ptr<kernel_runtime_dir> runtime;
    std::shared_ptr<sandboxed_kernel> kernel;

    // `inner` as kernel_command would build it; `tag` names the cgroup.
    sandbox_start(const spawn_description& inner, const sandbox_policy& policy, uid_t uid,
                  const std::string& tag) {
        sandbox box("/usr/bin/bwrap", cgroup_layout::detect());
        const sandbox_identity who{uid, uid};
        workdir = std::make_unique<session_workdir>(root.path(), "w", who, policy.disk_bytes);
        runtime = std::make_unique<kernel_runtime_dir>(runtime_root.path(), "r",
                                                       transport_kind::ipc, "t");
        kernel = box.prepare(inner, policy, who, workdir->path(), runtime->path(),
                             runtime->connection_file(), tag + "-" + std::to_string(::getpid()));
    }
    std::string output(const std::string& file) const { return read_file(workdir->path() / file); }
};

}  // namespace callisto::launcher::test
