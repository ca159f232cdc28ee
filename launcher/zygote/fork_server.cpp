#include "launcher/zygote/fork_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <system_error>

#include "launcher/seqpacket.hpp"
#include "launcher/zygote/kernel_jail.hpp"
#include "launcher/zygote/pid_one.hpp"

namespace callisto::launcher::zygote {

namespace proto = zygote_protocol;

namespace {

// How long a fork may take to reach the kernel's first line of Python.
constexpr int setup_timeout_ms = 10000;

// In a child: tells the zygote why the start failed (the pipe's only content) and exits.
[[noreturn]] void report_and_exit(int report, const std::string& why) {
    [[maybe_unused]] auto n = ::write(report, why.data(), why.size());
    ::_exit(127);
}

// The zygote died between the fork and PR_SET_PDEATHSIG: no signal will come, so go now. The
// report pipe's read end was the zygote's alone.
void exit_if_zygote_gone(int report) {
    pollfd p{report, 0, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) ::_exit(127);
}

void redirect_stdio(int output) {
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull < 0 || ::dup2(devnull, STDIN_FILENO) < 0)
        throw std::system_error(errno, std::generic_category(), "redirecting stdin");
    const int out = output >= 0 ? output : devnull;
    if (::dup2(out, STDOUT_FILENO) < 0 || ::dup2(out, STDERR_FILENO) < 0)
        throw std::system_error(errno, std::generic_category(), "redirecting stdout and stderr");
}

// Every descriptor above 2 but those in `keep` goes: nothing of the zygote's reaches the kernel.
void close_all_but(std::vector<int> keep) {
    std::sort(keep.begin(), keep.end());
    unsigned next = 3;
    for (int fd : keep) {
        if (fd < 3) continue;
        if (static_cast<unsigned>(fd) > next) ::close_range(next, static_cast<unsigned>(fd) - 1, 0);
        next = static_cast<unsigned>(fd) + 1;
    }
    ::close_range(next, ~0U, 0);
}

// The environment the gateway wrote for this kernel, read by the fork alone.
std::map<std::string, std::string> read_environment(int fd) {
    std::string text;
    char buffer[4096];
    for (off_t at = 0;;) {
        const auto n = ::pread(fd, buffer, sizeof buffer, at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw std::system_error(errno, std::generic_category(), "reading the environment");
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        at += n;
    }
    return zygote_protocol::decode_environment(text);
}

void set_death_signal(int report) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        throw std::system_error(errno, std::generic_category(), "PR_SET_PDEATHSIG");
    exit_if_zygote_gone(report);
}

}  // namespace

fork_server::fork_server(int control_fd, python_runtime& python, std::filesystem::path scratch,
                         std::string seccomp_bpf)
    : control_(control_fd),
      python_(python),
      scratch_(std::move(scratch)),
      seccomp_bpf_(std::move(seccomp_bpf)) {
    own_pid_namespace_.reset(::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC));
    if (!own_pid_namespace_)
        throw std::system_error(errno, std::generic_category(), "open /proc/self/ns/pid");
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    child_signals_.reset(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!child_signals_) throw std::system_error(errno, std::generic_category(), "signalfd");
}

void fork_server::run() {
    std::vector<pollfd> fds;
    for (;;) {
        kill_due();
        std::optional<clock::time_point> wake_at;
        for (const auto& [pid, kill_at] : kernels_)
            if (kill_at && (!wake_at || *kill_at < *wake_at)) wake_at = kill_at;
        for (const auto& start : starting_)
            if (!wake_at || start.deadline < *wake_at) wake_at = start.deadline;
        const int timeout =
            wake_at ? static_cast<int>(std::max<long long>(
                          0, std::chrono::ceil<std::chrono::milliseconds>(*wake_at - clock::now())
                                 .count()))
                    : -1;
        fds.assign({{control_, POLLIN, 0}, {child_signals_.get(), POLLIN, 0}});
        for (const auto& start : starting_) fds.push_back({start.report.get(), POLLIN, 0});
        if (::poll(fds.data(), fds.size(), timeout) < 0) {
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "poll");
        }
        // Reports first: a kernel that reached Python and died at once is reported forked,
        // then exited.
        std::vector<bool> ended(starting_.size());
        for (std::size_t i = 0; i < starting_.size(); ++i)
            ended[i] = fds[i + 2].revents != 0 && read_report(starting_[i]);
        const auto now = clock::now();
        for (std::size_t i = starting_.size(); i-- > 0;) {
            if (!ended[i] && starting_[i].deadline <= now) {
                auto& start = starting_[i];
                ::kill(-start.pid, SIGKILL);
                ::kill(start.pid, SIGKILL);
                start.why = "the kernel's sandbox setup took longer than " +
                            std::to_string(setup_timeout_ms / 1000) + " s";
                ended[i] = true;
            }
            if (ended[i]) {
                report_start(starting_[i]);
                starting_.erase(starting_.begin() + static_cast<std::ptrdiff_t>(i));
            }
        }
        if (fds[1].revents & POLLIN) {
            signalfd_siginfo info;
            while (::read(child_signals_.get(), &info, sizeof info) > 0) {
            }
            reap();
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            std::optional<seqpacket_message> message;
            try {
                message = receive_seqpacket(control_);
            } catch (const std::system_error& e) {
                std::cerr << "callisto-zygote: " << e.what() << "\n";
            }
            if (!message) break;  // the gateway has gone
            on_message(message->bytes, std::move(message->fds));
        }
    }
    // Kernels do not outlive the gateway that asked for them, unless it asked them to (the
    // next gateway adopts them). A fork still starting was never reported: it goes too.
    std::vector<pid_t> doomed;
    for (const auto& [pid, kill_at] : kernels_)
        if (!outliving_.contains(pid)) doomed.push_back(pid);
    for (const auto& start : starting_)
        if (!start.wait_status) doomed.push_back(start.pid);
    for (pid_t pid : doomed) {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
    }
    for (pid_t pid : doomed)
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
}

void fork_server::on_message(const std::string& bytes, std::vector<unique_fd> fds) {
    proto::order order;
    try {
        order = proto::decode_order(bytes);
    } catch (const std::invalid_argument& e) {
        std::cerr << "callisto-zygote: " << e.what() << "\n";
        send(proto::encode(proto::fork_failed_event{0, e.what()}));
        return;
    }
    if (auto* fork = std::get_if<proto::fork_order>(&order)) {
        if (fds.empty()) {
            send(proto::encode(proto::fork_failed_event{fork->id, "no environment was passed"}));
            return;
        }
        unique_fd output = fds.size() > 1 ? std::move(fds[1]) : unique_fd();
        fork_kernel(*fork, std::move(fds[0]), std::move(output));
    } else if (auto* sig = std::get_if<proto::signal_order>(&order)) {
        // Only to a kernel not yet reaped: its pid cannot have been reused.
        if (kernels_.contains(sig->pid) && ::kill(-sig->pid, sig->signal) != 0)
            ::kill(sig->pid, sig->signal);
    } else if (auto* term = std::get_if<proto::terminate_order>(&order)) {
        auto it = kernels_.find(term->pid);
        if (it == kernels_.end()) return;
        ::kill(-term->pid, SIGTERM);
        it->second = clock::now() + std::chrono::milliseconds(term->grace_ms);
    }
}

void fork_server::fork_kernel(const proto::fork_order& order, unique_fd environment,
                              unique_fd output) {
    auto fail = [&](const std::string& why) {
        send(proto::encode(proto::fork_failed_event{order.id, why}));
    };
    if (order.argv.size() < 3 || order.argv[1] != "-m") {
        fail("a zygote runs `python -m module`, not " + order.argv.front());
        return;
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        fail(std::string("pipe: ") + std::strerror(errno));
        return;
    }
    unique_fd report_read(fds[0]);
    unique_fd report_write(fds[1]);
    const bool jailed = order.layout.has_value();
    // The fork becomes pid 1 of a new pid namespace; children made after are ours again.
    if (jailed && ::unshare(CLONE_NEWPID) != 0) {
        fail(std::string("unshare(CLONE_NEWPID): ") + std::strerror(errno));
        return;
    }
    python_.before_fork();
    const pid_t pid = ::fork();
    if (pid == 0) {
        report_read.reset();
        if (jailed) jail_child(order, environment.get(), output.get(), report_write.get());
        kernel_child(order, environment.get(), output.get(), report_write.get(), false);
    }
    const int fork_error = errno;
    python_.after_fork_in_parent();
    if (jailed && ::setns(own_pid_namespace_.get(), CLONE_NEWPID) != 0) {
        // Every later jail would nest inside this one: better to stop and be restarted.
        std::cerr << "callisto-zygote: setns back to its own pid namespace: "
                  << std::strerror(errno) << "\n";
        std::_Exit(70);
    }
    report_write.reset();
    output.reset();
    environment.reset();
    if (pid < 0) {
        fail(std::string("fork: ") + std::strerror(fork_error));
        return;
    }
    starting_.push_back({order.id,
                         pid,
                         std::move(report_read),
                         clock::now() + std::chrono::milliseconds(setup_timeout_ms),
                         order.outlive_gateway,
                         {},
                         std::nullopt});
}

bool fork_server::read_report(starting_kernel& start) {
    char buffer[512];
    const auto n = ::read(start.report.get(), buffer, sizeof buffer);
    if (n > 0) {
        start.why.append(buffer, static_cast<std::size_t>(n));
        return false;
    }
    return !(n < 0 && (errno == EINTR || errno == EAGAIN));
}

void fork_server::report_start(starting_kernel& start) {
    if (!start.why.empty()) {
        // The child exits by itself after its report (or was killed); reap() collects it.
        send(proto::encode(
            proto::fork_failed_event{start.order_id, "cannot start the kernel: " + start.why}));
        return;
    }
    send(proto::encode(proto::forked_event{start.order_id, start.pid}));
    if (start.wait_status) {
        send(proto::encode(proto::exited_event{start.pid, *start.wait_status}));
        return;
    }
    kernels_.emplace(start.pid, std::nullopt);
    if (start.outlive_gateway) outliving_.insert(start.pid);
}

void fork_server::jail_child(const proto::fork_order& order, int environment, int output,
                             int report) {
    try {
        // Its own session and process group: the gateway's signals to the group reach it, and
        // it hands them to the kernel.
        ::setsid();
        if (!order.outlive_gateway) set_death_signal(report);
        redirect_stdio(output);
        close_all_but({report, environment});
        join_cgroups(order.cgroup_procs_files);
        enter_namespaces();
        build_root(*order.layout, scratch_);
        apply_rlimits(order.rlimits);

        sigset_t all;
        sigfillset(&all);
        ::sigprocmask(SIG_BLOCK, &all, nullptr);
        const pid_t kernel = ::fork();
        if (kernel < 0) throw std::system_error(errno, std::generic_category(), "fork");
        if (kernel == 0) kernel_child(order, environment, -1, report, true);
        ::close(environment);

        become_unprivileged(order.uid, order.gid, true);
        // Its memory is a copy of the zygote's: not for the kernel to read.
        if (::prctl(PR_SET_DUMPABLE, 0) != 0 || ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
            throw std::system_error(errno, std::generic_category(), "prctl");
        if (!order.outlive_gateway) set_death_signal(report);  // a new uid cleared it
        ::close(report);
        run_pid_one(kernel);
    } catch (const std::exception& e) {
        report_and_exit(report, e.what());
    }
}

void fork_server::kernel_child(const proto::fork_order& order, int environment, int output,
                               int report, bool jailed) {
    std::map<std::string, std::string> env;
    try {
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (jailed) {
            // Out of pid 1's session: the gateway's signals come through pid 1.
            ::setsid();
            if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
                throw std::system_error(errno, std::generic_category(), "PR_SET_PDEATHSIG");
        } else {
            ::setpgid(0, 0);
            if (!order.outlive_gateway) set_death_signal(report);
            redirect_stdio(output);
            close_all_but({report, environment});
            join_cgroups(order.cgroup_procs_files);
            apply_rlimits(order.rlimits);
        }
        env = read_environment(environment);
        ::close(environment);
        become_unprivileged(order.uid, order.gid, jailed);
        if (jailed && ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
            throw std::system_error(errno, std::generic_category(), "PR_SET_PDEATHSIG");
        const std::string cwd = jailed ? sandbox_workdir : order.cwd.string();
        if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
            throw std::system_error(errno, std::generic_category(), "chdir " + cwd);
        if (jailed) confine(seccomp_bpf_);
        ::prctl(PR_SET_NAME, "callisto-kernel");
    } catch (const std::exception& e) {
        report_and_exit(report, e.what());
    }
    ::close(report);  // EOF: the zygote reports the fork
    // The zygote's death is the kernel's through the death signal, or not at all (outliving).
    env.erase("JPY_PARENT_PID");
    ::_exit(python_.run_kernel(order.argv, env));
}

void fork_server::reap() {
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        auto start = std::find_if(starting_.begin(), starting_.end(),
                                  [&](const starting_kernel& s) { return s.pid == pid; });
        if (start != starting_.end()) {
            start->wait_status = status;  // reported with the end of its report
            continue;
        }
        if (kernels_.erase(pid) == 0) continue;
        outliving_.erase(pid);
        send(proto::encode(proto::exited_event{pid, status}));
    }
}

void fork_server::kill_due() {
    const auto now = clock::now();
    for (auto& [pid, kill_at] : kernels_)
        if (kill_at && *kill_at <= now) {
            ::kill(-pid, SIGKILL);
            ::kill(pid, SIGKILL);
            kill_at.reset();
        }
}

void fork_server::send(const std::string& bytes) {
    if (!send_seqpacket(control_, bytes))
        std::cerr << "callisto-zygote: send: " << std::strerror(errno) << "\n";
}

}  // namespace callisto::launcher::zygote
