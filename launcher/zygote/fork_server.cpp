#include "launcher/zygote/fork_server.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <system_error>

#include "launcher/process/memfd.hpp"
#include "launcher/zygote/blank_arguments.hpp"
#include "launcher/zygote/jail_init.hpp"
#include "launcher/zygote/kernel_jail.hpp"
#include "launcher/zygote/seqpacket.hpp"

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
    return zygote_protocol::decode_environment(memfd_contents(fd, "the environment"));
}

// The parent's pid as this process's /proc shows it (getppid() answers in our own pid
// namespace, where it is 1).
pid_t parent_pid_in_proc() {
    char text[1024];
    const unique_fd stat(::open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
    const auto n = stat ? ::read(stat.get(), text, sizeof text - 1) : -1;
    if (n <= 0) throw std::system_error(errno, std::generic_category(), "reading /proc/self/stat");
    text[n] = '\0';
    // pid (comm) state ppid ...: comm may hold anything, so read after its last ')'.
    const char* close = std::strrchr(text, ')');
    char state = 0;
    int ppid = 0;
    if (!close || std::sscanf(close + 1, " %c %d", &state, &ppid) != 2 || ppid <= 0)
        throw std::runtime_error("cannot read the parent's pid from /proc/self/stat");
    return ppid;
}

void set_death_signal(int report) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        throw std::system_error(errno, std::generic_category(), "PR_SET_PDEATHSIG");
    exit_if_zygote_gone(report);
}

}  // namespace

fork_server::fork_server(int control_fd, python_runtime& python, std::filesystem::path scratch,
                         std::string seccomp_bpf, std::filesystem::path jail_init,
                         page_prefault start_writes, std::span<char*> own_arguments)
    : control_(control_fd),
      python_(python),
      scratch_(std::move(scratch)),
      seccomp_bpf_(std::move(seccomp_bpf)),
      jail_init_(std::move(jail_init)),
      start_writes_(std::move(start_writes)),
      own_arguments_(own_arguments) {
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
        fork_kernel(*fork, bytes, std::move(fds[0]), std::move(output));
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

void fork_server::fork_kernel(const proto::fork_order& order, const std::string& order_bytes,
                              unique_fd environment, unique_fd output) {
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
    pid_t pid = -1;
    if (order.layout) {
        try {
            pid = fork_jailed(order, order_bytes, environment.get(), output.get(),
                              report_write.get());
        } catch (const std::exception& e) {
            fail(e.what());
            return;
        }
    } else {
        python_.before_fork();
        pid = ::fork();
        if (pid == 0) {
            report_read.reset();
            kernel_child(order, environment.get(), output.get(), report_write.get(), {});
        }
        const int fork_error = errno;
        python_.after_fork_in_parent();
        if (pid < 0) {
            fail(std::string("fork: ") + std::strerror(fork_error));
            return;
        }
    }
    report_write.reset();
    output.reset();
    environment.reset();
    starting_.push_back({order.id,
                         pid,
                         std::move(report_read),
                         clock::now() + std::chrono::milliseconds(setup_timeout_ms),
                         order.outlive_gateway,
                         {},
                         std::nullopt});
}

pid_t fork_server::fork_jailed(const proto::fork_order& order, const std::string& order_bytes,
                               int environment, int output, int report) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "pipe");
    const unique_fd ready_read(fds[0]);
    const unique_fd ready_write(fds[1]);
    const unique_fd order_fd = memfd_holding("callisto-fork-order", order_bytes);
    const unique_fd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!devnull) throw std::system_error(errno, std::generic_category(), "open /dev/null");
    // pid 1's descriptors 0 to 5 (jail_init.hpp), lifted above those numbers first so that no
    // dup2 in the child overwrites another's source.
    jail_descriptors wanted{};
    wanted[STDIN_FILENO] = devnull.get();
    wanted[STDOUT_FILENO] = wanted[STDERR_FILENO] = output >= 0 ? output : devnull.get();
    wanted[jail_init_fd::order] = order_fd.get();
    wanted[jail_init_fd::report] = report;
    wanted[jail_init_fd::ready] = ready_write.get();
    std::vector<unique_fd> lifted;
    jail_descriptors sources{};
    for (std::size_t i = 0; i < sources.size(); ++i) {
        lifted.emplace_back(::fcntl(wanted[i], F_DUPFD_CLOEXEC, 10));
        if (!lifted.back()) throw std::system_error(errno, std::generic_category(), "fcntl");
        sources[i] = lifted.back().get();
    }
    const std::string scratch = "--scratch=" + scratch_.string();
    char kernel[32] = "--kernel=";  // the pid, written by the child
    char* argv[] = {const_cast<char*>(jail_init_program), const_cast<char*>(scratch.c_str()),
                    kernel, nullptr};

    // Children made from here on are born in a new pid namespace.
    if (::unshare(CLONE_NEWPID) != 0)
        throw std::system_error(errno, std::generic_category(), "unshare(CLONE_NEWPID)");
    python_.before_fork();
    const pid_t pid_one = spawn_jail(order, environment, output, report, ready_read.get(), sources,
                                     argv, kernel + std::strlen(kernel));
    const int spawn_error = errno;
    python_.after_fork_in_parent();
    if (::setns(own_pid_namespace_.get(), CLONE_NEWPID) != 0) {
        // Every later jail would nest inside this one: better to stop and be restarted.
        std::cerr << "callisto-zygote: setns back to its own pid namespace: "
                  << std::strerror(errno) << "\n";
        std::_Exit(70);
    }
    if (pid_one < 0) throw std::system_error(spawn_error, std::generic_category(), "vfork");
    return pid_one;
}

pid_t fork_server::spawn_jail(const proto::fork_order& order, int environment, int output,
                              int report, int ready, const jail_descriptors& sources,
                              char* const* argv, char* kernel_digits) {
    // The vfork child is the new namespace's pid 1 and shares the zygote's memory until its
    // exec: it forks the kernel (pid 2, its child for good), then becomes
    // `callisto-jail-init` (jail_init.hpp), which builds the jail around both. No allocation,
    // nothing but system calls here.
    const pid_t pid = ::vfork();
    if (pid != 0) return pid;
    const pid_t kernel = ::fork();
    if (kernel == 0) kernel_child(order, environment, output, report, jailed_kernel{ready});
    // std::to_chars: no allocation, no locale, as a vfork child needs.
    *std::to_chars(kernel_digits, kernel_digits + 16, kernel > 0 ? kernel : -errno).ptr = '\0';
    // Its own session and process group: the gateway's signals to the group reach it, and it
    // hands them to the kernel.
    ::setsid();
    for (std::size_t i = 0; i < sources.size(); ++i) ::dup2(sources[i], static_cast<int>(i));
    ::close_range(static_cast<unsigned>(sources.size()), ~0U, CLOSE_RANGE_CLOEXEC);
    char* no_environment[] = {nullptr};
    ::execve(jail_init_.c_str(), argv, no_environment);
    constexpr char why[] = "exec of the jail's pid 1 failed";
    [[maybe_unused]] auto n = ::write(jail_init_fd::report, why, sizeof why - 1);
    ::_exit(127);
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

void fork_server::kernel_child(const proto::fork_order& order, int environment, int output,
                               int report, std::optional<jailed_kernel> jail) {
    // The descriptors are closed by hand: their owners are the zygote's unique_fds, which this
    // forked child never destroys (it leaves by _exit), and each goes when its part is done
    // (the report's EOF tells the zygote the kernel runs).
    std::map<std::string, std::string> env;
    try {
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (jail) {
            // Its own session, out of pid 1's: the gateway's signals come through pid 1.
            ::setsid();
            if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
                throw std::system_error(errno, std::generic_category(), "PR_SET_PDEATHSIG");
            redirect_stdio(output);
            close_all_but({report, environment, jail->ready});
            join_cgroups(order.cgroup_procs_files);
            fault_in_start_writes(order);  // while pid 1 builds the jail
            char built = 0;
            while (::read(jail->ready, &built, 1) < 0 && errno == EINTR) {
            }
            if (built != '1') ::_exit(127);  // pid 1 reported why
            ::close(jail->ready);
            // pid 1 by its pid in this /proc, the host's until the mount namespace changes.
            join_namespaces_of(parent_pid_in_proc());
        } else {
            ::setpgid(0, 0);
            if (!order.outlive_gateway) set_death_signal(report);
            redirect_stdio(output);
            close_all_but({report, environment});
            join_cgroups(order.cgroup_procs_files);
            fault_in_start_writes(order);
        }
        apply_rlimits(order.rlimits);
        env = read_environment(environment);
        ::close(environment);
        become_unprivileged(order.uid, order.gid, jail.has_value());
        if (jail && ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
            throw std::system_error(errno, std::generic_category(), "PR_SET_PDEATHSIG");
        const std::string cwd = jail ? sandbox_workdir : order.cwd.string();
        if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
            throw std::system_error(errno, std::generic_category(), "chdir " + cwd);
        if (jail) {
            // Its /proc/self/cmdline shows the zygote's arguments, which name host paths.
            blank_arguments(static_cast<int>(own_arguments_.size()), own_arguments_.data());
            confine(seccomp_bpf_);
        }
        ::prctl(PR_SET_NAME, "callisto-kernel");
    } catch (const std::exception& e) {
        report_and_exit(report, e.what());
    }
    ::close(report);  // EOF: the zygote reports the fork
    // The zygote's death is the kernel's through the death signal, or not at all (outliving).
    env.erase("JPY_PARENT_PID");
    ::_exit(python_.run_kernel(order.argv, env));
}

void fork_server::fault_in_start_writes(const proto::fork_order& order) const {
    // The module test _callisto_run_kernel makes for ipykernel's own start.
    if (order.argv[2].starts_with("ipykernel")) start_writes_.fault_in();
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
