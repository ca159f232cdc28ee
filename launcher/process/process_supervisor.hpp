#pragma once
// One long-lived thread that spawns every kernel process and watches each one's exit.
//
// Spawning from one thread matters: PR_SET_PDEATHSIG (and bwrap's --die-with-parent) fire when
// the *thread* that forked exits, so a short-lived spawning thread would kill its kernels.
// Exits are watched with pidfds in the same poll loop; each child is reaped exactly once.

#include <sys/types.h>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/logger.hpp"
#include "launcher/process/spawn_description.hpp"

namespace callisto::launcher {

struct exit_status {
    int exit_code = -1;  // valid when signal == 0
    int signal = 0;      // the terminating signal, 0 for a normal exit
    bool core_dumped = false;
    // Set by whoever knows more than the wait status, e.g. the sandbox:
    // "killed: out of memory (limit 2GiB)". describe() returns it when set.
    std::string verdict;
    bool out_of_memory = false;  // killed at its memory limit (the sandbox's cgroup says so)
    // "exited with code 1", "killed by signal 9 (SIGKILL)"
    std::string describe() const;
};

class process_supervisor {
public:
    // Called on the supervisor thread, once per child, after it was reaped.
    using exit_handler = std::function<void(pid_t, exit_status)>;

    explicit process_supervisor(logger log);
    ~process_supervisor();  // SIGKILLs the groups of children still running, reaps, joins
    process_supervisor(const process_supervisor&) = delete;
    process_supervisor& operator=(const process_supervisor&) = delete;

    // Starts the child in its own process group (pgid == pid) with PR_SET_PDEATHSIG(SIGKILL).
    // Blocks until the fork/exec outcome is known. Throws std::system_error when exec fails
    // (the child reports errno through a CLOEXEC pipe).
    pid_t spawn(const spawn_description& what, exit_handler on_exit);

    // Watches a process that is not our child: a kernel an earlier gateway (or a zygote that
    // exited) started to outlive it. Its group is signalled as a child's; its exit is seen
    // through a pidfd, but its status goes to its new parent, so on_exit gets an unknown
    // status. False when it is gone already (or pidfds are unavailable).
    bool adopt(pid_t pid, exit_handler on_exit);

    // Sends a signal to the child's process group. No-op once it was reaped.
    void signal_group(pid_t pid, int sig);
    // Sends a signal to the process group of each of the child's own children: under bwrap,
    // the sandbox's init, whose group the kernel shares (--new-session), where a signal to
    // bwrap itself would stop at bwrap. No-op once it was reaped.
    void signal_child_groups(pid_t pid, int sig);

    // SIGTERM to the group now, SIGKILL to the group after `grace` if still running.
    void terminate(pid_t pid, std::chrono::milliseconds grace);

    bool running(pid_t pid) const;
    std::size_t running_count() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace callisto::launcher
