#pragma once
// The Python every ipykernel Callisto starts runs before the kernel's own code
// (launcher/kernelspec/ipykernel_bootstrap.py): an iopub socket that holds a burst of output
// instead of dropping it past ZeroMQ's high-water mark, history in memory, errors cut to fit a
// message, the descriptions of DataFrames and figures E2B's results carry, and an exit that
// waits for the control thread's last reply.

#include <filesystem>
#include <string>
#include <string_view>

#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/spawn_description.hpp"

namespace callisto::launcher {

// The bootstrap's source: definitions only, nothing runs.
std::string_view ipykernel_bootstrap_source();

// Whether the kernelspec's kernel answers heartbeats while it runs code: ipykernel does, from a
// thread of its own; IRkernel and others answer from their main loop, between executions.
bool answers_heartbeat_while_busy(const kernelspec& spec);

// `python -m ipykernel... args` as `python -c LOADER <dir>/ipykernel_bootstrap.py ipykernel...
// args`, which runs the bootstrap, written to that file here, then the module as -m would.
// The bootstrap (27 KB) is read from the file, not given on the command line, which `ps` shows
// for every kernel; `dir` is the kernel's runtime directory, which its sandbox sees at the same
// path. Any other command is returned unchanged, and nothing written. Throws std::system_error
// when the file cannot be written.
spawn_description with_ipykernel_bootstrap(spawn_description what,
                                           const std::filesystem::path& dir);

}  // namespace callisto::launcher
