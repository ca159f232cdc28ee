#pragma once
// Starting one process: everything the child needs is prepared before fork, the child runs an
// async-signal-safe path to execve (process group, parent-death signal, cgroups, rlimits, the
// drop to its uid, closing every descriptor it must not keep), and a failure on that path
// comes back through a CLOEXEC pipe as the stage that failed and its errno.

#include <sys/types.h>

#include <string>

#include "launcher/process/spawn_description.hpp"

namespace callisto::launcher {

struct launched {
    pid_t pid;
    std::string path;  // the program, as found on the child's PATH
};

// Forks and execs; returns once execve has succeeded. Throws std::system_error naming the
// program and the stage that failed ("cannot start python3: execve /usr/bin/python3"), with
// the child already reaped; std::invalid_argument for an empty argv or a bad inherited fd.
launched fork_exec(const spawn_description& what);

}  // namespace callisto::launcher
