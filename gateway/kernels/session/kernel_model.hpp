#pragma once
// What REST handlers, the culler and the pool read of a kernel while its strand works: the
// execution state, last activity, connections, owner and why it died. Its own small mutex, so
// a GET /api/kernels never waits for a kernel's strand.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "gateway/kernels/lifecycle/culling_policy.hpp"

namespace callisto::gateway::kernels {

// How much of the process behind a kernel its model shows. An admin sees how it started (a
// zygote's fork or an exec), its host pid and its memory (PSS of its process tree), read again
// when older than a minute in a list (`shown`), than 5 s for one kernel (a walk of its
// mappings: not on every answer). A user sees none of it.
enum class kernel_process_view { hidden, shown, shown_with_fresh_memory };

// What holds a kernel, for an admin looking at the list: a Jupyter client's kernel (the
// default), an interpreter context's (/v1 or an MCP session's), or the reuse keep's, where a
// reset kernel waits for its owner's next context.
enum class kernel_holder { client, context, mcp, keep };
std::string_view to_string(kernel_holder holder);

class kernel_model {
public:
    kernel_model();

    // {id, name, last_activity, execution_state, connections[, reason][, callisto: {launch,
    // pid, pss_bytes, owner, started, executions, held_by[, context_id]}]}: what `view` allows
    // of the process behind it (kernel_process_view).
    nlohmann::json to_json(const std::string& id, const std::string& name,
                           kernel_process_view view = kernel_process_view::hidden) const;
    kernel_activity activity() const;
    std::string reason() const;

    std::string owner() const;
    void assign_owner(std::string name);
    // What holds the kernel now; context_id for a context or an MCP session's context.
    void hold(kernel_holder holder, std::string context_id = {});
    // An execution a user sent (not the gateway's own resets and runners).
    void count_execution();

    // Now is activity: a request arrived, or the kernel was handed to someone.
    void touch();
    // A new lifecycle state ("starting", "idle", "restarting", "dead") and why.
    void set(std::string execution_state, std::string reason);
    void set_connections(std::size_t n);
    // The process now behind the kernel (0: none), and whether a zygote forked it.
    void set_process(pid_t pid, bool forked);
    bool forked() const;
    pid_t pid() const;
    // A kernel message arrived: that is activity. A status message of a running kernel also
    // changes the execution state; `execution_state` is "" for every other message.
    void on_kernel_message(std::string_view execution_state, bool running);

private:
    mutable std::mutex mutex_;
    std::string execution_state_ = "starting";
    std::chrono::system_clock::time_point last_activity_;
    std::chrono::system_clock::time_point busy_since_;
    const std::chrono::system_clock::time_point started_at_;
    std::size_t connections_ = 0;
    std::string reason_;
    std::string owner_;
    kernel_holder holder_ = kernel_holder::client;
    std::string holder_context_;
    std::uint64_t executions_ = 0;
    pid_t pid_ = 0;
    bool forked_ = false;
    mutable std::optional<std::uint64_t> pss_;  // cached, read at pss_read_
    mutable std::chrono::steady_clock::time_point pss_read_{};
};

}  // namespace callisto::gateway::kernels
