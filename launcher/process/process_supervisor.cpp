#include "launcher/process/process_supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <string.h>  // sigabbrev_np
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <fstream>
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
#include "launcher/process/child_launch.hpp"

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

// Children without a pidfd (pidfd_open unavailable) are checked this often.
constexpr int fallback_poll_ms = 100;

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
        unique_fd pidfd;  // none: checked every fallback_poll_ms
        exit_handler on_exit;
        std::optional<clock::time_point> kill_at;  // SIGKILL the group then (terminate's grace)
        bool adopted = false;                      // not our child: no status to wait for
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
    const auto [pid, path] = fork_exec(what);
    unique_fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd)
        log_.warn("pidfd_open(" + std::to_string(pid) + "): " + std::strerror(errno) +
                  "; polling for its exit instead");
    else
        ::fcntl(pidfd.get(), F_SETFD, FD_CLOEXEC);  // pidfds are CLOEXEC already; be explicit
    {
        std::lock_guard lock(mutex_);
        children_.emplace(pid, child{std::move(pidfd), std::move(on_exit), std::nullopt});
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
                if (c.pidfd) {
                    fds.push_back(pollfd{c.pidfd.get(), POLLIN, 0});
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
                if (!c.pidfd) candidates.push_back(pid);

            for (pid_t pid : candidates) {
                auto it = children_.find(pid);
                if (it == children_.end()) continue;
                exit_status status;
                if (it->second.adopted) {
                    status.verdict =
                        "exited (its status went to its new parent: it outlived "
                        "the gateway that started it)";
                    exited.emplace_back(pid, status, std::move(it->second.on_exit));
                    children_.erase(it);
                    continue;
                }
                siginfo_t info{};
                int rc;
                do {
                    rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG);
                } while (rc < 0 && errno == EINTR);
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

bool process_supervisor::adopt(pid_t pid, exit_handler on_exit) {
    unique_fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) return false;
    // A zombie (its parent has not reaped it yet) is as good as gone.
    if (pollfd p{pidfd.get(), POLLIN, 0}; ::poll(&p, 1, 0) > 0) return false;
    {
        std::lock_guard lock(impl_->mutex_);
        if (impl_->stopping_ || impl_->children_.contains(pid)) return false;
        impl_->children_.emplace(
            pid, impl::child{std::move(pidfd), std::move(on_exit), std::nullopt, true});
    }
    impl_->log_.info("adopted pid " + std::to_string(pid));
    impl_->wake();
    return true;
}

void process_supervisor::signal_group(pid_t pid, int sig) {
    std::lock_guard lock(impl_->mutex_);
    if (impl_->children_.contains(pid)) impl_->send_locked(pid, sig);
}

void process_supervisor::signal_child_groups(pid_t pid, int sig) {
    // Under the lock, as signal_group: the child is not reaped meanwhile, so its children are
    // still the ones listed (a grandchild that exits first is reaped by the child alone).
    std::lock_guard lock(impl_->mutex_);
    if (!impl_->children_.contains(pid)) return;
    const auto id = std::to_string(pid);
    std::ifstream list("/proc/" + id + "/task/" + id + "/children");
    for (pid_t child = 0; list >> child;) impl_->send_locked(child, sig);
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
