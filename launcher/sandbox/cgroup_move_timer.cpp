#include "launcher/sandbox/cgroup_move_timer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

namespace {

std::int64_t monotonic_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// One child joins the cgroups, as a kernel does, and reports how long its writes to their
// cgroup.procs took, in ns. Only async-signal-safe calls in the child: the gateway may
// already run threads.
std::int64_t time_one_move(const std::vector<std::string>& procs_files, std::string& error) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        error = std::string("pipe: ") + std::strerror(errno);
        return -1;
    }
    unique_fd report_read(fds[0]);
    unique_fd report_write(fds[1]);
    const pid_t pid = ::fork();
    if (pid < 0) {
        error = std::string("fork: ") + std::strerror(errno);
        return -1;
    }
    if (pid == 0) {
        std::int64_t took = monotonic_ns();
        for (const auto& file : procs_files) {
            const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0 || ::write(fd, "0", 1) != 1) took = -1;
            // A raw close, as all in this child: plain system calls, nothing that hides code.
            if (fd >= 0) ::close(fd);
            if (took < 0) break;
        }
        if (took >= 0) took = monotonic_ns() - took;
        [[maybe_unused]] auto n = ::write(report_write.get(), &took, sizeof took);
        ::_exit(0);
    }
    report_write.reset();
    std::int64_t took = -1;
    ssize_t n;
    while ((n = ::read(report_read.get(), &took, sizeof took)) < 0 && errno == EINTR) {
    }
    report_read.reset();
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (n != sizeof took || took < 0) {
        error = "the child could not join " + procs_files.front() + " and the like";
        return -1;
    }
    return took;
}

}  // namespace

cgroup_move_timing time_cgroup_move(const cgroup_layout& layout, const std::string& name,
                                    int samples, std::chrono::milliseconds gap) {
    cgroup_move_timing result;
    const auto hierarchies = layout.hierarchies();
    if (hierarchies.empty()) {
        result.error = "no cgroups";
        return result;
    }
    std::vector<std::filesystem::path> dirs;
    std::vector<std::string> procs_files;
    for (const auto& hierarchy : hierarchies) {
        const auto parent = hierarchy / layout.parent;
        const auto dir = parent / name;
        if ((::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) ||
            ::mkdir(dir.c_str(), 0755) != 0) {
            result.error = "mkdir " + dir.string() + ": " + std::strerror(errno);
            break;
        }
        dirs.push_back(dir);
        procs_files.push_back((dir / "cgroup.procs").string());
    }
    std::vector<std::int64_t> took;
    for (int i = 0; i < samples && result.error.empty(); ++i) {
        if (i > 0) std::this_thread::sleep_for(gap);
        if (const auto ns = time_one_move(procs_files, result.error); ns >= 0) took.push_back(ns);
    }
    // The children have exited; an exiting task may still be leaving its cgroups.
    for (const auto& dir : dirs)
        for (int attempt = 0; attempt < 20 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY;
             ++attempt)
            ::usleep(5000);
    if (took.empty()) return result;
    std::sort(took.begin(), took.end());
    result.median_ms = static_cast<double>(took[took.size() / 2]) / 1e6;
    result.error.clear();
    return result;
}

}  // namespace callisto::launcher
