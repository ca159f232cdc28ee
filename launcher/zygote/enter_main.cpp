// callisto-enter: one command run in a running kernel's sandbox, beside the kernel, as its own
// process (E2B's commands; gateway/e2b/sandbox_process.hpp starts it, as root):
//
//   callisto-enter KERNEL_PID CWD -- PROGRAM [ARGS...]      (environment: the command's)
//     fd 0, 1, 2  the command's stdin, stdout and stderr
//     fd 3        control: each byte read is a signal for the command's process group; end of
//                 file (the gateway done with it, or gone) kills the group
//     fd 4        report: "pid N\n", the command's pid in the sandbox, once it runs; then
//                 "exit N\n" or "signal N\n" when it ends
//     fd 5        the kernel's seccomp program (BPF), read to its end
//
// It enters the sandbox (sandbox_entry.hpp), drops to the kernel's uid and gid with no
// capability left, installs the same seccomp filter, and only then forks: the command is a
// child in the sandbox's pid namespace, and this process, as confined, stays outside it to
// wait for it and relay signals (a pid namespace is entered by the children of who joins it).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "launcher/zygote/kernel_jail.hpp"
#include "launcher/zygote/sandbox_entry.hpp"

namespace {

namespace zygote = callisto::launcher::zygote;

constexpr int control_fd = 3, report_fd = 4, seccomp_fd = 5;

void report(const std::string& line) {
    const std::string text = line + "\n";
    [[maybe_unused]] auto n = ::write(report_fd, text.data(), text.size());
}

std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) out.append(buf, static_cast<std::size_t>(n));
        if (n == 0) return out;
        if (n < 0 && errno != EINTR) return {};
    }
}

// The group first (the command and what it started), the command alone while it has not yet
// made its own group.
void signal_command(pid_t child, int sig) {
    if (::kill(-child, sig) != 0) ::kill(child, sig);
}

[[noreturn]] void run_command(char** argv) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::setsid();  // its own group, for signals; no controlling terminal
    report("pid " + std::to_string(::getpid()));
    ::execvp(argv[0], argv);
    std::fprintf(stderr, "%s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
}

// Waits for the command, relaying the control pipe's signals, and reports how it ended.
int relay(pid_t child, int child_exits) {
    bool control_open = true;
    for (;;) {
        pollfd fds[2] = {{child_exits, POLLIN, 0}, {control_open ? control_fd : -1, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return 1;
        }
        if (fds[1].revents) {
            unsigned char signals[64];
            const ssize_t n = ::read(control_fd, signals, sizeof signals);
            if (n == 0 || (n < 0 && errno != EINTR)) {
                control_open = false;
                signal_command(child, SIGKILL);
            }
            for (ssize_t i = 0; i < n; ++i) signal_command(child, signals[i]);
        }
        if (fds[0].revents) {
            signalfd_siginfo info{};
            [[maybe_unused]] auto n = ::read(child_exits, &info, sizeof info);
            int status = 0;
            if (::waitpid(child, &status, WNOHANG) != child) continue;
            // What it left running in its group goes with it, as with a closed terminal.
            ::kill(-child, SIGKILL);
            if (WIFEXITED(status))
                report("exit " + std::to_string(WEXITSTATUS(status)));
            else
                report("signal " + std::to_string(WTERMSIG(status)));
            return 0;
        }
    }
}

[[noreturn]] void fail(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5 || std::string(argv[3]) != "--") {
        std::fprintf(stderr,
                     "usage: callisto-enter KERNEL_PID CWD -- PROGRAM [ARGS...] (started by the "
                     "gateway, not by hand)\n");
        return 2;
    }
    // Nothing of the gateway's beyond the six descriptors; the command inherits 0-2 only.
    ::syscall(SYS_close_range, 6u, ~0u, 0u);
    ::fcntl(control_fd, F_SETFD, FD_CLOEXEC);
    ::fcntl(report_fd, F_SETFD, FD_CLOEXEC);
    const std::string bpf = read_all(seccomp_fd);
    ::close(seccomp_fd);  // a fixed number the gateway set, owned by no object
    ::signal(SIGPIPE, SIG_IGN);
    try {
        const auto member = zygote::read_sandbox_of(static_cast<pid_t>(std::atol(argv[1])));
        zygote::enter_sandbox(member, argv[2]);
        zygote::become_unprivileged(std::nullopt, std::nullopt, true);  // the bounding set
        if (::setresgid(member.gid, member.gid, member.gid) != 0) fail("setresgid");
        if (::setresuid(member.uid, member.uid, member.uid) != 0) fail("setresuid");
        zygote::confine(bpf);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "callisto-enter: %s\n", e.what());
        return 1;
    }
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &chld, nullptr);
    const int child_exits = ::signalfd(-1, &chld, SFD_CLOEXEC);
    const pid_t child = ::fork();
    if (child < 0) {
        std::fprintf(stderr, "callisto-enter: fork: %s\n", std::strerror(errno));
        return 1;
    }
    if (child == 0) run_command(argv + 4);
    return relay(child, child_exits);
}
