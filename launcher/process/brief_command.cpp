#include "launcher/process/brief_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <system_error>
#include <thread>

#include "common/unique_fd.hpp"
#include "launcher/process/child_launch.hpp"

namespace callisto::launcher {

namespace {

using clock = std::chrono::steady_clock;

int remaining_ms(clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace

std::string brief_result::describe() const {
    if (timed_out) return "did not finish in time";
    if (signal != 0) return "killed by signal " + std::to_string(signal);
    return "exited with code " + std::to_string(exit_code);
}

brief_result run_brief_command(spawn_description what, std::chrono::milliseconds timeout,
                               std::size_t output_limit) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "pipe");
    unique_fd read_end(fds[0]);
    unique_fd write_end(fds[1]);
    what.output_fd = write_end.get();
    what.inherit_fds.clear();
    what.outlive_gateway = false;
    const auto deadline = clock::now() + timeout;
    const pid_t pid = fork_exec(what).pid;
    write_end.reset();

    brief_result result;
    // Until EOF (every copy of the pipe closed) or the deadline; what passes the limit is read
    // and dropped, so a chatty command never blocks on a full pipe.
    for (;;) {
        pollfd p{read_end.get(), POLLIN, 0};
        const int ready = ::poll(&p, 1, remaining_ms(deadline));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        char buf[4096];
        const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        const auto room = output_limit - std::min(output_limit, result.output.size());
        result.output.append(buf, std::min(room, static_cast<std::size_t>(n)));
    }
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "waitpid");
        if (remaining_ms(deadline) == 0) {
            // Its own process group (fork_exec): whatever it started goes with it.
            ::kill(-pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            result.timed_out = true;
            return result;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFEXITED(status))
        result.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        result.signal = WTERMSIG(status);
    return result;
}

}  // namespace callisto::launcher
