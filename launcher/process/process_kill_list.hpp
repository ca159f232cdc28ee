#pragma once
// Killing processes found by pid (in a cgroup.procs file, under /proc) without hitting a
// recycled pid: each is opened as a pidfd first, then checked, then signalled through the
// pidfd, so what was checked is what is killed; poll() on the pidfds says when they are gone.

#include <sys/types.h>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <vector>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

class process_kill_list {
public:
    // Kills `pid` with SIGKILL when `is_ours(pid)` (which reads /proc/<pid>) says so, asked
    // after the pidfd is open. Never pid 0, 1 or ourselves; each pid once.
    void kill_if(pid_t pid, const std::function<bool(pid_t)>& is_ours);

    std::size_t size() const { return killed_.size(); }

    // Waits until every killed process has exited; returns those that have not.
    std::vector<pid_t> wait(std::chrono::milliseconds limit);

private:
    std::map<pid_t, unique_fd> killed_;
};

// The pids a cgroup directory lists in cgroup.procs (empty when it cannot be read).
std::vector<pid_t> cgroup_procs(const std::filesystem::path& dir);

// Whether /proc/<pid>/cgroup places the process in a cgroup whose path contains `member`
// ("callisto/<name>").
bool process_in_cgroup(pid_t pid, const std::string& member);

}  // namespace callisto::launcher
