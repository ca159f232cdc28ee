#pragma once
// What each kernel session is told by the server's configuration: where its files go, how long
// it may take to start, how often it may restart, and how much of its output the gateway holds.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>

#include "launcher/sandbox/sandbox_policy.hpp"

namespace callisto::gateway::kernels {

struct kernel_settings {
    std::string default_kernel;                             // empty: the catalog's default
    std::filesystem::path runtime_root;                     // connection files and ipc sockets
    bool ipc_transport = true;                              // false: tcp on 127.0.0.1
    std::filesystem::path workdir_root;                     // sandboxed kernels: one dir per kernel
    launcher::sandbox_policy limits;                        // defaults; kernelspecs may override
    std::size_t replay_buffer_bytes = 8u << 20;             // iopub kept for ?since=
    std::size_t kernel_buffer_bytes = 128u << 20;           // its messages held; 0: none
    std::size_t kernel_message_limit_bytes = 64u << 20;     // one message part from the kernel
    std::size_t ws_output_limit_bytes = 8u << 20;           // per execution, stdout + stderr
    std::size_t ws_rich_output_limit_bytes = 64u << 20;     // per execution, display_data, ...
    std::chrono::milliseconds kernel_ready_timeout{60000};  // spawn -> kernel_info_reply
    std::size_t autorestart_limit = 3;                      // after unexpected deaths; 0: never
    std::chrono::seconds autorestart_window{60};            // ... per this many seconds
    std::chrono::milliseconds shutdown_wait{5000};          // shutdown_request -> SIGTERM
    std::chrono::milliseconds kill_grace{3000};             // SIGTERM -> SIGKILL
    // How long past a kernel's longest stop (shutdown_wait, then kill_grace) the gateway's stop
    // waits for the last exit: one may be reported late on a loaded host, never this late.
    std::chrono::milliseconds stop_margin{10000};
    // A kernel removed for good is first asked to exit (shutdown_request), as jupyter_server
    // does, so that its exit handlers run. False where nothing they could do outlives the
    // kernel (sandboxed: no network, its files and processes go with it): it is terminated
    // at once, sparing the exit's work. A restart asks either way (the kernel's files stay).
    bool ask_before_removing = true;
    // Heartbeats unanswered this long: the process is frozen (stopped, deadlocked outside
    // Python: ipykernel's heartbeat thread needs no GIL), so it is killed and restarted per
    // the autorestart rule. 0: never.
    std::chrono::seconds heartbeat_timeout{30};
    // A process whose record cannot be written to --state-dir is stopped, its start refused.
    bool state_required = false;
};

}  // namespace callisto::gateway::kernels
