#pragma once
// envd's process.Process service as Callisto serves it, its wire half: each request's JSON and
// its bad forms, and the ProcessEvent messages of Start's and Connect's streams, each in a
// Connect envelope: start {pid} first, data {stdout|stderr} (base64 bytes) as the output
// comes, end {exitCode, exited, status}, then the end-of-stream frame. A command runs as a
// process of its own in the kernel's sandbox (sandbox_process.hpp). Pure: unit-tested.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/e2b/e2b_errors.hpp"
#include "gateway/interpreter/execution_env.hpp"

namespace callisto::gateway::e2b {

// StartRequest's process config, as asked (List shows it back), and where it runs.
struct process_start {
    std::string cmd;
    std::vector<std::string> args;
    interpreter::env_vars env;  // process.envs
    std::string cwd_asked;      // "" when none was given
    std::string cwd;            // inside the sandbox: its workdir, or a directory below it
    std::optional<std::string> tag;
    bool stdin_open = false;
};

// StartRequest's JSON ({process: {cmd, args, envs, cwd}, pty, tag, stdin}): cmd and args are
// run as they are (the SDK sends /bin/bash -l -c X). A pty is refused (unimplemented), as is a
// malformed request (invalid_argument) or a cwd outside the home (permission_denied).
std::optional<process_start> parse_process_start(std::string_view message,
                                                 const interpreter::env_limits& limits,
                                                 connect_code& code, std::string& error);

// ProcessSelector: {pid} or {tag}.
struct process_selector {
    std::optional<std::uint32_t> pid;
    std::optional<std::string> tag;
};
// The `process` selector of ConnectRequest, CloseStdinRequest and the two below.
std::optional<process_selector> parse_selector_request(std::string_view message, connect_code& code,
                                                       std::string& error);

// SendSignalRequest: {process, signal}, the signal "SIGNAL_SIGKILL" or "SIGNAL_SIGTERM" (or
// their numbers, 9 and 15): the two Signal values envd's protocol has.
struct signal_request {
    process_selector process;
    int signal = 0;
};
std::optional<signal_request> parse_send_signal(std::string_view message, connect_code& code,
                                                std::string& error);

// SendInputRequest: {process, input: {stdin: base64}} (a pty's input is refused).
struct input_request {
    process_selector process;
    std::string bytes;
};
std::optional<input_request> parse_send_input(std::string_view message, connect_code& code,
                                              std::string& error);

// How a command ended, as envd says it: exit code, whether it exited, Go's status text
// ("exit status 3", "signal: killed"), and an error unless it exited 0 (the status again, as
// Go's exec.ExitError says it, or why it did not run to its end).
struct process_exit {
    int code = -1;
    bool exited = false;
    std::string status;
    std::optional<std::string> error;
};
// callisto-enter's report line ("exit N", "signal N"); anything else is an error.
process_exit exit_of_report(std::string_view line);

// The envelopes of one process's stream.
std::string start_frame(std::uint32_t pid);
std::string keepalive_frame();
std::string data_frame(std::string_view stream, std::string_view bytes);  // stdout | stderr
// The end event, then the end-of-stream frame.
std::vector<std::string> end_frames(const process_exit& exit);

// A streaming call refused: Connect answers 200 with only the end frame,
// {"error": {"code", "message"}}; this is that body.
std::string stream_error_body(connect_code code, std::string_view message);

}  // namespace callisto::gateway::e2b
