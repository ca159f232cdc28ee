#include "launcher/sandbox/sandbox_command.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>

#include "launcher/process/memfd.hpp"

namespace callisto::launcher {

namespace {

[[noreturn]] void fail(int err, const char* what) {
    throw std::system_error(err, std::generic_category(), what);
}

struct pipe_pair {
    unique_fd read, write;
};

pipe_pair make_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) fail(errno, "pipe2");
    return {unique_fd(fds[0]), unique_fd(fds[1])};
}

void non_blocking(const unique_fd& fd) {
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
}

// A copy above the child's six numbers, so no dup2 of the spawn overwrites another's source.
unique_fd high_copy(const unique_fd& fd) {
    unique_fd out(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 16));
    if (!out) fail(errno, "F_DUPFD_CLOEXEC");
    return out;
}

}  // namespace

sandbox_command start_sandbox_command(const sandbox_command_request& request) {
    auto in = make_pipe(), out = make_pipe(), err = make_pipe(), control = make_pipe(),
         report = make_pipe();
    unique_fd bpf = memfd_holding("callisto-seccomp", request.seccomp_bpf);
    // The child's ends, in the order of their numbers 0..5.
    std::array<unique_fd, 6> child_ends{high_copy(in.read),      high_copy(out.write),
                                        high_copy(err.write),    high_copy(control.read),
                                        high_copy(report.write), high_copy(bpf)};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    for (int target = 0; target < 6; ++target)
        posix_spawn_file_actions_adddup2(&actions, child_ends[target].get(), target);

    std::vector<std::string> args = {request.enter_program.string(),
                                     std::to_string(request.kernel_pid), request.cwd, "--"};
    args.insert(args.end(), request.argv.begin(), request.argv.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_lines;
    for (const auto& [name, value] : request.env) env_lines.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& line : env_lines) envp.push_back(line.data());
    envp.push_back(nullptr);

    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, request.enter_program.c_str(), &actions, nullptr,
                                 argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) fail(rc, "posix_spawn callisto-enter");

    sandbox_command cmd;
    cmd.pid = pid;
    if (request.stdin_open) cmd.stdin_fd = std::move(in.write);
    cmd.stdout_fd = std::move(out.read);
    cmd.stderr_fd = std::move(err.read);
    cmd.report_fd = std::move(report.read);
    cmd.control_fd = std::move(control.write);
    for (const auto* fd :
         {&cmd.stdin_fd, &cmd.stdout_fd, &cmd.stderr_fd, &cmd.report_fd, &cmd.control_fd})
        if (*fd) non_blocking(*fd);
    return cmd;
}

}  // namespace callisto::launcher
