#pragma once
// The tools Callisto offers over MCP: their definitions (names, descriptions, JSON input
// schemas) and the checking of a tools/call's arguments against them. Pure, so every bad
// argument is unit-tested.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "gateway/languages/execution_language.hpp"

namespace callisto::gateway::mcp {

// Every tool takes "language": which of the session's kernels it is about (none: the default
// kernel's). Python's kernel also runs bash and sql, in its working directory; R has a kernel
// and a working directory of its own.
using tool_language = std::optional<languages::execution_language>;

struct run_code_args {
    static constexpr std::string_view tool = "run_code";
    std::string code;
    std::chrono::milliseconds timeout;
    tool_language language;
    std::size_t output_budget = 0;  // text kept per stream
    // One of the user's own contexts (made by fork_context or restore_snapshot, or over
    // /v1), resumed first when paused; empty: the session's.
    std::string context_id;
};
// The file tools and restart_context, like run_code, work in the session's context of
// `language`, or in the one of the user's contexts that context_id names (resumed first).
struct upload_file_args {
    static constexpr std::string_view tool = "upload_file";
    std::string path;
    std::string bytes;  // decoded
    tool_language language;
    std::string context_id;
};
struct list_files_args {
    static constexpr std::string_view tool = "list_files";
    bool include_hidden = false;  // the kernel's dot-directories (.cache, .ipython, ...)
    tool_language language;
    std::string context_id;
};
struct read_file_args {
    static constexpr std::string_view tool = "read_file";
    std::string path;
    tool_language language;
    std::string context_id;
};
struct restart_context_args {
    static constexpr std::string_view tool = "restart_context";
    tool_language language;
    std::string context_id;
};

// Snapshots, forks, pause and resume (issue 37): the /v1 operations, with their checks. A
// context_id names one of the user's contexts; empty: the session's (of `language`).
struct snapshot_context_args {
    static constexpr std::string_view tool = "snapshot_context";
    tool_language language;
    std::string context_id;
};
struct list_snapshots_args {
    static constexpr std::string_view tool = "list_snapshots";
};
struct delete_snapshot_args {
    static constexpr std::string_view tool = "delete_snapshot";
    std::string snapshot_id;
};
struct restore_snapshot_args {
    static constexpr std::string_view tool = "restore_snapshot";
    std::string snapshot_id;
};
struct fork_context_args {
    static constexpr std::string_view tool = "fork_context";
    std::size_t count = 1;
    tool_language language;
    std::string context_id;
};
// The session's own contexts are never paused (it finds them live): these take an id.
struct pause_context_args {
    static constexpr std::string_view tool = "pause_context";
    std::string context_id;
};
struct resume_context_args {
    static constexpr std::string_view tool = "resume_context";
    std::string context_id;
};

using tool_call = std::variant<run_code_args, upload_file_args, list_files_args, read_file_args,
                               restart_context_args, snapshot_context_args, list_snapshots_args,
                               delete_snapshot_args, restore_snapshot_args, fork_context_args,
                               pause_context_args, resume_context_args>;

// The most copies one fork_context makes (POST /v1/contexts/{id}/fork's limit).
inline constexpr std::size_t max_tool_forks = 16;

struct tool_limits {
    std::size_t max_code_bytes = 1 << 20;
    std::chrono::seconds default_timeout{120};
    std::chrono::seconds max_timeout{3600};
    // A model reads every byte of a result: 1 MiB of output is about a quarter of a million
    // tokens. What a call keeps per stream unless it asks for more, up to the server's.
    std::size_t default_output_budget = 32 << 10;
    std::size_t max_output_budget = 1 << 20;
    std::size_t max_upload_bytes = 8 << 20;
};

// The "tools" array of a tools/list result.
nlohmann::json tool_definitions(const tool_limits& limits);

// `params` of tools/call: {"name", "arguments"}. On error returns nullopt and a sentence for
// an invalid-params error (unknown tool, missing or mistyped argument, unknown argument).
std::optional<tool_call> parse_tool_call(const nlohmann::json& params, const tool_limits& limits,
                                         std::string& error);

}  // namespace callisto::gateway::mcp
