#pragma once
// Whether a kernelspec can run where its kernels will, checked once per kernelspec when the
// catalog loads (kernelspec_catalog's check): its argv[0] found (interpreter_environment.hpp),
// visible and executable to the sandbox uids, its environment showing none of the gateway's
// own directories, and, for a `python -m module` kernelspec, its module importable by that
// interpreter inside a sandbox like its kernels'. A kernelspec that fails is not offered: the
// reason is logged at start and answered to whoever asks for it.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/sandbox/sandbox.hpp"

namespace callisto::launcher {

struct kernelspec_check_settings {
    const sandbox* box = nullptr;  // null: kernels run unsandboxed, as this process does
    sandbox_identity who{0, 0};    // a sandbox uid to try the interpreter as
    // The gateway's own files and directories (workdir root, runtime root, state, keys): an
    // environment the sandbox would show may hold none of them, nor lie inside one.
    std::vector<std::filesystem::path> private_paths;
    std::chrono::milliseconds timeout{30000};  // for trying the interpreter
};

// "" when `spec` may be offered, else why not, in a sentence an admin can act on.
[[nodiscard]] std::string kernelspec_problem(const kernelspec& spec,
                                             const kernelspec_check_settings& settings);

// The part that needs no process: argv[0] found, and with a sandbox, what it needs reachable
// by the sandbox uids (every directory on the way searchable by others, the interpreter
// executable by others, a venv's pyvenv.cfg readable) and clear of `private_paths`.
[[nodiscard]] std::string kernelspec_static_problem(
    const kernelspec& spec, bool sandboxed,
    const std::vector<std::filesystem::path>& private_paths);

}  // namespace callisto::launcher
