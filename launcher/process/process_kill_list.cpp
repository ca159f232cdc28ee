#include "launcher/process/process_kill_list.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>

namespace callisto::launcher {

namespace {

int open_pidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

bool pidfd_kill(int pidfd) {
    return ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0 || errno == ESRCH;
}

}  // namespace

void process_kill_list::kill_if(pid_t pid, const std::function<bool(pid_t)>& is_ours) {
    if (pid <= 1 || pid == ::getpid() || killed_.count(pid)) return;
    unique_fd fd(open_pidfd(pid));
    if (!fd || !is_ours(pid)) return;
    if (pidfd_kill(fd.get())) killed_.emplace(pid, std::move(fd));
}

std::vector<pid_t> process_kill_list::wait(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<pid_t> left;
    for (auto& [pid, fd] : killed_) {
        pollfd p{fd.get(), POLLIN, 0};
        for (;;) {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                deadline - std::chrono::steady_clock::now())
                                .count();
            const int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(ms, 0)));
            if (n > 0 || (n < 0 && errno != EINTR) || ms <= 0) break;
        }
        if (!(p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) left.push_back(pid);
    }
    return left;
}

std::vector<pid_t> cgroup_procs(const std::filesystem::path& dir) {
    std::vector<pid_t> pids;
    std::ifstream in(dir / "cgroup.procs");
    long pid = 0;
    while (in >> pid) pids.push_back(static_cast<pid_t>(pid));
    return pids;
}

bool process_in_cgroup(pid_t pid, const std::string& member) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    std::stringstream text;
    text << in.rdbuf();
    return text.str().find(member) != std::string::npos;
}

}  // namespace callisto::launcher
