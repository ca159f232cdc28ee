#include "launcher/zygote/pid_one.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace callisto::launcher::zygote {

void run_pid_one(pid_t kernel) {
    sigset_t all;
    sigfillset(&all);
    for (;;) {
        siginfo_t info{};
        const int sig = ::sigwaitinfo(&all, &info);
        if (sig < 0) continue;  // EINTR
        if (sig != SIGCHLD) {
            // A blocked signal is queued even for a namespace's init, which would otherwise
            // drop every signal it has no handler for.
            // SIGINT goes to the kernel's group (it leads its own session), as a terminal's
            // Ctrl-C and ipykernel's own interrupt do: a subprocess it waits for stops too.
            if (sig == SIGINT)
                ::kill(-kernel, sig);
            else if (sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT || sig == SIGUSR1 ||
                     sig == SIGUSR2)
                ::kill(kernel, sig);
            continue;
        }
        for (;;) {
            int status = 0;
            const pid_t pid = ::waitpid(-1, &status, WNOHANG);
            if (pid <= 0) break;
            if (pid != kernel) continue;
            ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
    }
}

}  // namespace callisto::launcher::zygote
