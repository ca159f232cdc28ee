#pragma once
// A short command run to its end from the calling thread, its output kept: the checks made at
// start (that a kernelspec's interpreter runs in the sandbox). Kernels are not run this way:
// process_supervisor spawns and watches those.

#include <chrono>
#include <cstddef>
#include <string>

#include "launcher/process/spawn_description.hpp"

namespace callisto::launcher {

struct brief_result {
    int exit_code = -1;  // valid when signal == 0 and not timed out
    int signal = 0;
    bool timed_out = false;  // killed (with its process group) at the deadline
    std::string output;      // stdout and stderr together, the first output_limit bytes

    bool succeeded() const { return !timed_out && signal == 0 && exit_code == 0; }
    // "exited with code 3", "killed by signal 9", "did not finish within 30000 ms"
    std::string describe() const;
};

// Runs `what` (its argv, env, cwd, uid and gid; output_fd is replaced) with stdin from
// /dev/null. Throws std::system_error when it cannot be started at all.
brief_result run_brief_command(spawn_description what, std::chrono::milliseconds timeout,
                               std::size_t output_limit = 4096);

}  // namespace callisto::launcher
