#pragma once
// envd's process.Process/Start (the SDK's commands.run) as Callisto runs it: the command
// becomes a bash execution of the sandbox's default context (the shell runner: the kernel's
// sandbox, uid, limits and working directory, its whole process group stopped on an
// interrupt), and the execution's events become Connect's stream of ProcessEvent messages,
// each in an envelope: start {pid} first, data {stdout|stderr} (base64 bytes) as the output
// comes, end {exitCode, exited, status}, then the end-of-stream frame. Pure: the request's
// bad forms and the event mapping are unit-tested.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/e2b/e2b_errors.hpp"
#include "gateway/interpreter/execution_env.hpp"

namespace callisto::gateway::e2b {

struct process_start {
    std::string script;  // for /bin/bash
    interpreter::env_vars env;
};

// StartRequest's JSON ({process: {cmd, args, envs, cwd}, pty, tag, stdin}): "/bin/bash -l -c
// X" (the SDK's shape) runs X; any other command line runs as `exec` of its words, quoted.
// `cwd` (an E2B path) becomes a `cd` first. A pty or stdin is refused (unimplemented), as
// is a malformed request (invalid_argument) or a cwd outside the home (permission_denied).
std::optional<process_start> parse_process_start(std::string_view message,
                                                 const interpreter::env_limits& limits,
                                                 connect_code& code, std::string& error);

// A word for bash, single-quoted.
std::string shell_quote(std::string_view word);

// The envelopes of one process's stream.
std::string start_frame(std::uint32_t pid);
std::string keepalive_frame();
// The frames an execution event gives ("stdout", "stderr", "end"); none for the others.
std::vector<std::string> process_frames(const nlohmann::json& event);
// The exit code an ended execution means: 0 for ok, the shell runner's status for its
// ShellError, -1 for anything else (a signal, a deadline, an interrupt); and envd's status
// text ("exit status 3", "signal: killed").
struct process_exit {
    int code = -1;
    std::string status;
    std::optional<std::string> error;
};
process_exit exit_of(const nlohmann::json& execution);

// A streaming call refused: Connect answers 200 with only the end frame,
// {"error": {"code", "message"}}; this is that body.
std::string stream_error_body(connect_code code, std::string_view message);

}  // namespace callisto::gateway::e2b
