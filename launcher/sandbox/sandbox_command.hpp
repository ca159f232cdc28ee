#pragma once
// Starts one command in a running kernel's sandbox through callisto-enter
// (launcher/zygote/enter_main.cpp), and hands back its ends: the command's stdin, stdout and
// stderr, the control pipe its signals go through, and the report pipe that says its pid in
// the sandbox and how it ended. The command is as confined as the kernel: callisto-enter takes
// the kernel's namespaces, cgroups, rlimits and ids, and this seccomp program, the kernel's.

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

struct sandbox_command_request {
    std::filesystem::path enter_program;  // callisto-enter
    pid_t kernel_pid = 0;                 // the kernel's host pid (its bwrap, or its jail's pid 1)
    std::string cwd;                      // inside the sandbox
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;  // the command's whole environment
    std::string seccomp_bpf;
    bool stdin_open = false;  // false: the command reads end-of-file
};

struct sandbox_command {
    pid_t pid = 0;       // callisto-enter's host pid, the caller's child to reap
    unique_fd stdin_fd;  // the write end, or none when !stdin_open
    unique_fd stdout_fd, stderr_fd, report_fd;  // read ends
    unique_fd control_fd;  // write end: one byte per signal; closing it kills the command
};

// posix_spawn of callisto-enter with its six descriptors in place; the caller's ends are
// non-blocking and close-on-exec. Throws std::system_error.
sandbox_command start_sandbox_command(const sandbox_command_request& request);

}  // namespace callisto::launcher
