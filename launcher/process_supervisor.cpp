#include "launcher/process_supervisor.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <string.h>  // sigabbrev_np
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

std::string exit_status::describe() const {
    if (!verdict.empty()) return verdict;
    if (signal != 0) {
        std::string text = "killed by signal " + std::to_string(signal);
        if (const char* abbrev = ::sigabbrev_np(signal))
            text += std::string(" (SIG") + abbrev + ")";
        if (core_dumped) text += ", core dumped";
        return text;
    }
    if (exit_code < 0) return "exit status unknown";
    return "exited with code " + std::to_string(exit_code);
}

namespace {

using clock = std::chrono::steady_clock;

constexpr const char* default_path = "/usr/local/bin:/usr/bin:/bin";
// Children without a pidfd (pidfd_open unavailable) are checked this often.
constexpr int fallback_poll_ms = 100;

// What a child writes to the CLOEXEC pipe when it fails before or at execve.
enum class child_stage : int {
    setpgid,
    pdeathsig,
    stdin_redirect,
    chdir,
    exec,
    cgroup,
    rlimit,
    setgroups,
    setgid,
    setuid,
    inherit_fd
};
struct child_error {
    child_stage stage;
    int error;
};

const char* stage_text(child_stage stage) {
    switch (stage) {
        case child_stage::setpgid: return "setpgid";
        case child_stage::pdeathsig: return "prctl(PR_SET_PDEATHSIG)";
        case child_stage::stdin_redirect: return "redirecting stdin";
        case child_stage::chdir: return "chdir";
        case child_stage::exec: return "execve";
        case child_stage::cgroup: return "joining the cgroup";
        case child_stage::rlimit: return "setrlimit";
        case child_stage::setgroups: return "setgroups";
        case child_stage::setgid: return "setresgid";
        case child_stage::setuid: return "setresuid";
        case child_stage::inherit_fd: return "keeping an inherited descriptor";
    }
    return "?";
}

// Resolved before fork: after fork only async-signal-safe calls are allowed, and execvpe would
// search the gateway's PATH rather than the child's.
std::string resolve_executable(const spawn_description& what) {
    const auto& name = what.argv.front();
    if (name.find('/') != std::string::npos) return name;
    auto it = what.env.find("PATH");
    const std::string search = it != what.env.end() ? it->second : default_path;
    std::size_t start = 0;
    while (start <= search.size()) {
        auto end = search.find(':', start);
        if (end == std::string::npos) end = search.size();
        const auto dir = search.substr(start, end - start);
        start = end + 1;
        if (dir.empty() || dir.front() != '/') continue;  // relative entries depend on a cwd
        const auto candidate = dir + "/" + name;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    throw std::system_error(ENOENT, std::generic_category(),
                            "cannot start " + name + ": not found on PATH " + search);
}

// What the child applies before execve, prepared before fork so the child only reads it.
struct child_setup {
    std::vector<const char*> cgroup_files;
    const std::vector<resource_limit>* rlimits = nullptr;
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    std::vector<int> keep_fds;  // sorted, unique: inherited fds plus the error pipe
    const std::vector<int>* inherit_fds = nullptr;
};

// Runs in the forked child: async-signal-safe calls only, no allocation, no locks.
[[noreturn]] void exec_child(const char* path, char* const* argv, char* const* envp,
                             const char* cwd, int devnull, int error_fd, pid_t parent,
                             const child_setup& setup) {
    auto fail = [error_fd](child_stage stage) {
        child_error report{stage, errno};
        [[maybe_unused]] auto n = ::write(error_fd, &report, sizeof report);
        ::_exit(127);
    };

    // Own process group: signals to the kernel reach everything it started, and a terminal's
    // Ctrl-C aimed at the gateway does not reach the kernel.
    if (::setpgid(0, 0) != 0) fail(child_stage::setpgid);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(child_stage::pdeathsig);
    // The gateway may have died between fork and prctl; then no signal will ever come.
    if (::getppid() != parent) ::_exit(127);

    // Ignored signals and the blocked mask survive execve; the kernel must start clean.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);

    if (::dup2(devnull, STDIN_FILENO) < 0) fail(child_stage::stdin_redirect);

    // Join the cgroup while still root, and before anything the limits should count.
    for (const char* file : setup.cgroup_files) {
        const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
        if (fd < 0) fail(child_stage::cgroup);
        if (::write(fd, "0", 1) != 1) fail(child_stage::cgroup);  // "0": the writing process
        ::close(fd);
    }
    for (const auto& limit : *setup.rlimits) {
        const struct rlimit value { limit.soft, limit.hard };
        if (::setrlimit(static_cast<__rlimit_resource>(limit.resource), &value) != 0)
            fail(child_stage::rlimit);
    }
    // Groups first: after setresuid we could no longer change them.
    if (setup.uid || setup.gid) {
        if (::setgroups(0, nullptr) != 0) fail(child_stage::setgroups);
        if (setup.gid && ::setresgid(*setup.gid, *setup.gid, *setup.gid) != 0)
            fail(child_stage::setgid);
        if (setup.uid && ::setresuid(*setup.uid, *setup.uid, *setup.uid) != 0)
            fail(child_stage::setuid);
        // A new effective uid or gid clears the parent-death signal (prctl(2)): without this a
        // sandboxed kernel outlived a gateway that died before bwrap's --die-with-parent ran.
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(child_stage::pdeathsig);
        if (::getppid() != parent) ::_exit(127);
    }
    if (cwd && ::chdir(cwd) != 0) fail(child_stage::chdir);

    for (int fd : *setup.inherit_fds)
        if (::fcntl(fd, F_SETFD, 0) != 0) fail(child_stage::inherit_fd);
    // Nothing of the gateway's (client sockets, ZMQ sockets, files) leaks into user code.
    unsigned next = 3;
    for (int keep : setup.keep_fds) {
        if (keep < 3) continue;
        if (static_cast<unsigned>(keep) > next)
            ::close_range(next, static_cast<unsigned>(keep) - 1, 0);
        next = static_cast<unsigned>(keep) + 1;
    }
    ::close_range(next, ~0U, 0);

    ::execve(path, argv, envp);
    fail(child_stage::exec);
    ::_exit(127);  // not reached
}

void signal_pgid(pid_t pid, int sig, const logger& log) {
    if (::kill(-pid, sig) != 0 && errno != ESRCH)
        log.warn("kill(-" + std::to_string(pid) + ", " + std::to_string(sig) +
                 "): " + std::strerror(errno));
}

}  // namespace

struct process_supervisor::impl {
    struct request {
        spawn_description what;
        exit_handler on_exit;
        std::promise<pid_t> result;
    };
    struct child {
        int pidfd = -1;  // -1: no pidfd, checked every fallback_poll_ms
        exit_handler on_exit;
        std::optional<clock::time_point> kill_at;  // SIGKILL the group then (terminate's grace)
    };

    logger log_;
    unique_fd wake_fd_;
    mutable std::mutex mutex_;
    std::deque<request> requests_;     // guarded by mutex_
    std::map<pid_t, child> children_;  // unreaped children, guarded by mutex_
    bool stopping_ = false;            // guarded by mutex_
    std::thread thread_;
    std::thread::id thread_id_;

    explicit impl(logger log) : log_(std::move(log)) {
        wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (wake_fd_.get() < 0)
            throw std::system_error(errno, std::generic_category(), "process supervisor: eventfd");
        thread_ = std::thread([this] { run(); });
        thread_id_ = thread_.get_id();
    }

    void wake() const {
        std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd_.get(), &one, sizeof one);
    }

    void run();
    pid_t start_child(const spawn_description& what, exit_handler on_exit);
    void send_locked(pid_t pid, int sig) const { signal_pgid(pid, sig, log_); }
};

pid_t process_supervisor::impl::start_child(const spawn_description& what, exit_handler on_exit) {
    if (what.argv.empty()) throw std::invalid_argument("spawn: argv is empty");
    const auto& name = what.argv.front();

    // Everything the child touches is built here, before fork.
    const std::string path = resolve_executable(what);
    std::vector<char*> argv;
    argv.reserve(what.argv.size() + 1);
    for (const auto& arg : what.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    env_strings.reserve(what.env.size());
    for (const auto& [key, value] : what.env) env_strings.push_back(key + "=" + value);
    std::vector<char*> envp;
    envp.reserve(env_strings.size() + 1);
    for (auto& entry : env_strings) envp.push_back(entry.data());
    envp.push_back(nullptr);
    const std::string cwd = what.cwd.string();

    child_setup setup;
    for (const auto& file : what.cgroup_procs_files) setup.cgroup_files.push_back(file.c_str());
    setup.rlimits = &what.rlimits;
    setup.uid = what.uid;
    setup.gid = what.gid;
    setup.inherit_fds = &what.inherit_fds;
    for (int fd : what.inherit_fds) {
        if (fd < 3 || ::fcntl(fd, F_GETFD) < 0)
            throw std::invalid_argument("cannot start " + name + ": inherited fd " +
                                        std::to_string(fd) + " is not an open descriptor above 2");
        setup.keep_fds.push_back(fd);
    }

    unique_fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (devnull.get() < 0)
        throw std::system_error(errno, std::generic_category(),
                                "cannot start " + name + ": /dev/null");
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "cannot start " + name + ": pipe");
    unique_fd read_end(pipe_fds[0]);
    unique_fd write_end(pipe_fds[1]);
    setup.keep_fds.push_back(write_end.get());
    std::sort(setup.keep_fds.begin(), setup.keep_fds.end());
    setup.keep_fds.erase(std::unique(setup.keep_fds.begin(), setup.keep_fds.end()),
                         setup.keep_fds.end());

    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::system_error(errno, std::generic_category(), "cannot start " + name + ": fork");
    if (pid == 0)
        exec_child(path.c_str(), argv.data(), envp.data(), cwd.empty() ? nullptr : cwd.c_str(),
                   devnull.get(), write_end.get(), parent, setup);

    // The pipe reads EOF when execve succeeded (CLOEXEC) or the child died before reporting.
    write_end.reset();
    child_error report{};
    ssize_t n;
    do {
        n = ::read(read_end.get(), &report, sizeof report);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        const int err = n == static_cast<ssize_t>(sizeof report) ? report.error : EIO;
        std::string what_failed = stage_text(report.stage);
        if (report.stage == child_stage::exec) what_failed += " " + path;
        if (report.stage == child_stage::chdir) what_failed += " " + cwd;
        throw std::system_error(err, std::generic_category(),
                                "cannot start " + name + ": " + what_failed);
    }

    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0)
        log_.warn("pidfd_open(" + std::to_string(pid) + "): " + std::strerror(errno) +
                  "; polling for its exit instead");
    else
        ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);  // pidfds are CLOEXEC already; be explicit
    {
        std::lock_guard lock(mutex_);
        children_.emplace(pid, child{pidfd, std::move(on_exit), std::nullopt});
    }
    log_.info("started pid " + std::to_string(pid) + ": " + path);
    return pid;
}

void process_supervisor::impl::run() {
    bool killed_all = false;
    std::vector<pollfd> fds;
    std::vector<pid_t> fd_pids;  // fd_pids[i] owns fds[i + 1]

    for (;;) {
        std::deque<request> pending;
        bool stopping;
        {
            std::lock_guard lock(mutex_);
            pending.swap(requests_);
            stopping = stopping_;
        }
        for (auto& req : pending) {
            if (stopping) {
                req.result.set_exception(std::make_exception_ptr(std::runtime_error(
                    "cannot start " +
                    (req.what.argv.empty() ? std::string("?") : req.what.argv.front()) +
                    ": the process supervisor is shutting down")));
                continue;
            }
            try {
                req.result.set_value(start_child(req.what, std::move(req.on_exit)));
            } catch (...) {
                req.result.set_exception(std::current_exception());
            }
        }

        int timeout_ms = -1;
        fds.assign(1, pollfd{wake_fd_.get(), POLLIN, 0});
        fd_pids.clear();
        {
            std::lock_guard lock(mutex_);
            if (stopping_ && !killed_all) {
                for (const auto& [pid, c] : children_) send_locked(pid, SIGKILL);
                killed_all = true;
            }
            if (stopping_ && children_.empty() && requests_.empty()) break;

            const auto now = clock::now();
            for (auto& [pid, c] : children_) {
                if (c.kill_at && *c.kill_at <= now) {
                    log_.info("pid " + std::to_string(pid) + " outlived its grace period; SIGKILL");
                    send_locked(pid, SIGKILL);
                    c.kill_at.reset();
                } else if (c.kill_at) {
                    auto wait =
                        std::chrono::ceil<std::chrono::milliseconds>(*c.kill_at - now).count();
                    auto ms = static_cast<int>(std::min<long long>(wait, 60'000));
                    timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
                }
                if (c.pidfd >= 0) {
                    fds.push_back(pollfd{c.pidfd, POLLIN, 0});
                    fd_pids.push_back(pid);
                } else {
                    timeout_ms =
                        timeout_ms < 0 ? fallback_poll_ms : std::min(timeout_ms, fallback_poll_ms);
                }
            }
        }

        if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
            if (errno != EINTR) log_.error(std::string("poll: ") + std::strerror(errno));
            continue;
        }
        if (fds[0].revents & POLLIN) {
            std::uint64_t count;
            [[maybe_unused]] auto n = ::read(wake_fd_.get(), &count, sizeof count);
        }

        // Reap under the lock, so signal_group never signals a pid that was reaped (and maybe
        // reused).
        std::vector<std::tuple<pid_t, exit_status, exit_handler>> exited;
        {
            std::lock_guard lock(mutex_);
            std::vector<pid_t> candidates;
            for (std::size_t i = 1; i < fds.size(); ++i)
                if (fds[i].revents != 0) candidates.push_back(fd_pids[i - 1]);
            for (const auto& [pid, c] : children_)
                if (c.pidfd < 0) candidates.push_back(pid);

            for (pid_t pid : candidates) {
                auto it = children_.find(pid);
                if (it == children_.end()) continue;
                siginfo_t info{};
                int rc;
                do {
                    rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG);
                } while (rc < 0 && errno == EINTR);
                exit_status status;
                if (rc < 0) {
                    // ECHILD: someone else reaped it (SIGCHLD ignored, or a waitpid(-1) elsewhere).
                    log_.warn("waitid(" + std::to_string(pid) + "): " + std::strerror(errno));
                } else if (info.si_pid == 0) {
                    continue;  // not exited yet
                } else if (info.si_code == CLD_EXITED) {
                    status.exit_code = info.si_status;
                } else {
                    status.signal = info.si_status;
                    status.core_dumped = info.si_code == CLD_DUMPED;
                }
                if (it->second.pidfd >= 0) ::close(it->second.pidfd);
                exited.emplace_back(pid, status, std::move(it->second.on_exit));
                children_.erase(it);
            }
        }
        for (auto& [pid, status, handler] : exited) {
            log_.info("pid " + std::to_string(pid) + " " + status.describe());
            if (!handler) continue;
            try {
                handler(pid, status);
            } catch (const std::exception& e) {
                log_.error("exit handler for pid " + std::to_string(pid) + " threw: " + e.what());
            } catch (...) {
                log_.error("exit handler for pid " + std::to_string(pid) + " threw");
            }
        }
    }
}

process_supervisor::process_supervisor(logger log)
    : impl_(std::make_unique<impl>(log.component("processes"))) {}

process_supervisor::~process_supervisor() {
    {
        std::lock_guard lock(impl_->mutex_);
        impl_->stopping_ = true;
    }
    impl_->wake();
    impl_->thread_.join();
}

pid_t process_supervisor::spawn(const spawn_description& what, exit_handler on_exit) {
    // From an exit handler we already are the spawning thread; queueing would deadlock.
    if (std::this_thread::get_id() == impl_->thread_id_) {
        {
            std::lock_guard lock(impl_->mutex_);
            if (impl_->stopping_)
                throw std::runtime_error(
                    "cannot start a process: the process supervisor is shutting down");
        }
        return impl_->start_child(what, std::move(on_exit));
    }

    std::future<pid_t> result;
    {
        std::lock_guard lock(impl_->mutex_);
        if (impl_->stopping_)
            throw std::runtime_error(
                "cannot start a process: the process supervisor is shutting down");
        impl::request req{what, std::move(on_exit), {}};
        result = req.result.get_future();
        impl_->requests_.push_back(std::move(req));
    }
    impl_->wake();
    return result.get();
}

void process_supervisor::signal_group(pid_t pid, int sig) {
    std::lock_guard lock(impl_->mutex_);
    if (impl_->children_.contains(pid)) impl_->send_locked(pid, sig);
}

void process_supervisor::terminate(pid_t pid, std::chrono::milliseconds grace) {
    {
        std::lock_guard lock(impl_->mutex_);
        auto it = impl_->children_.find(pid);
        if (it == impl_->children_.end()) return;
        impl_->send_locked(pid, SIGTERM);
        const auto at = clock::now() + grace;
        if (!it->second.kill_at || at < *it->second.kill_at) it->second.kill_at = at;
    }
    impl_->wake();  // the loop's poll timeout must now include this deadline
}

bool process_supervisor::running(pid_t pid) const {
    std::lock_guard lock(impl_->mutex_);
    return impl_->children_.contains(pid);
}

std::size_t process_supervisor::running_count() const {
    std::lock_guard lock(impl_->mutex_);
    return impl_->children_.size();
}

}  // namespace callisto::launcher
