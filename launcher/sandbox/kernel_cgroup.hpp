#pragma once
// One session sandbox's cgroup(s): created with the policy's memory, pids and CPU limits
// before its kernel first starts, joined by each start's child before execve (and by the
// commands run beside it), asked after an exit whether the OOM killer struck, and removed on
// destruction. Every kernel sharing the sandbox (E2B's contexts) runs in it, so the limits
// are the sandbox's, as a VM's are.

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "launcher/process/adopt_existing.hpp"
#include "launcher/sandbox/cgroup_layout.hpp"
#include "launcher/sandbox/sandbox_policy.hpp"

namespace callisto::launcher {

class kernel_cgroup {
public:
    // Creates <hierarchy>/<layout.parent>/<name> in each hierarchy and writes the limits.
    // Throws std::runtime_error naming the file that could not be written.
    kernel_cgroup(const cgroup_layout& layout, const std::string& name,
                  const sandbox_policy& policy);
    // Takes over the cgroup `name` an earlier gateway made for a kernel that outlived it.
    kernel_cgroup(adopt_existing_t, const cgroup_layout& layout, const std::string& name);
    ~kernel_cgroup();  // removes the directories (they are empty once the kernel was reaped)
    kernel_cgroup(const kernel_cgroup&) = delete;
    kernel_cgroup& operator=(const kernel_cgroup&) = delete;

    // The files the child writes "0" to, joining every hierarchy.
    std::vector<std::filesystem::path> procs_files() const;

    // How many times the kernel's OOM killer killed a process in this cgroup, ever.
    std::uint64_t oom_kills() const;

    // A kernel start about to run in it. Thread-safe, as are the two below.
    void start_entered();
    // A start's process was reaped. The last start out kills what is left (a sandbox that
    // outlived a bwrap killed while setting up, a command still running), so the next start
    // begins empty; while another kernel of the sandbox runs, nothing is touched.
    void start_left();
    // Its name under the layout's parent ("" when it has no directory).
    std::string name() const { return dirs_.empty() ? "" : dirs_.front().filename().string(); }

private:
    void kill_members();

    cgroup_layout layout_;
    std::mutex starts_mutex_;  // held from a last start's leaving until its leftovers are gone
    int starts_ = 0;
    std::vector<std::filesystem::path> dirs_;  // created, in creation order
    std::filesystem::path memory_dir_;
};

}  // namespace callisto::launcher
