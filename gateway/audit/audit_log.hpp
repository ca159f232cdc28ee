#pragma once
// --audit-log: every execution from every API (the Jupyter WebSocket, /v1, MCP) is recorded
// before it runs. A "run" line (who, where, what code) is written when the execution is
// accepted, before the kernel has the code; a write that fails refuses that execution (with
// --audit-required), so nothing runs unrecorded, and the next execution tries the write again,
// so nothing stays refused once space is back. An "end" line, linked by its run line's seq,
// says how it ended. Each start of the gateway writes an "open" line, each rotation a "rotate"
// line naming what it deleted. Lines are chained under a key (audit_chain.hpp); an anchor
// beside the key, moved on once a second after the log is on disk, makes a cut end
// detectable, here at start and by `callisto audit-verify`. docs/operations.md, "The audit
// log", says how to run it; docs/security.md, "The audit log", what it proves.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/logger.hpp"
#include "common/unique_fd.hpp"
#include "gateway/audit/audit_chain.hpp"

namespace callisto::gateway::audit {

struct audit_settings {
    std::filesystem::path file;      // empty: no audit log
    std::filesystem::path key_file;  // the chain's key, created (0600) when missing
    bool record_code = true;         // false: only the code's sha256 and size (--audit-code=hash)
    // Code (or user expressions) longer than this is recorded by sha256 and size only, whatever
    // record_code says: what one user can make the log hold per execution (--audit-code-limit).
    std::uint64_t code_limit = 64 << 10;
    std::uint64_t rotate_bytes = 0;  // a file past this is rotated; 0: never
    std::size_t keep = 0;            // rotated files kept (FILE.1 newest); 0: all
    bool required = true;            // refuse executions that cannot be recorded
    // How often what was written is made durable and the anchor moved on; 0: only at a
    // rotation, at close and when sync() is called (tests).
    std::chrono::milliseconds sync_interval{1000};
};

// An execution about to run, as the API that runs it knows it. Views: the caller keeps them
// alive for the call.
struct execution_start {
    std::chrono::system_clock::time_point started;
    std::string_view user;
    std::string_view api;  // "jupyter", "v1", "mcp"
    std::string_view kernel_id;
    std::string_view context_id;    // /v1 and MCP; empty for the Jupyter WebSocket
    std::string_view execution_id;  // the execute_request's msg_id, or the /v1 execution id
    // On the Jupyter WebSocket, what asked the kernel to run code when it was not an
    // execute_request ("debug_request evaluate", ...; kernels/code_requests.hpp); else empty.
    std::string_view request;
    std::string_view code;
    const nlohmann::json* user_expressions = nullptr;  // an execute_request's, or null
};

// How it ended.
struct execution_end {
    std::chrono::system_clock::time_point finished;
    std::string user;
    std::string api;
    std::string execution_id;
    std::uint64_t run_seq = 0;  // its run line's seq; 0 when none was written
    std::string status;         // "ok", "error", "aborted", "timeout", "lost", ...
    std::chrono::duration<double> duration{};
    std::uint64_t output_bytes = 0;
    std::vector<std::string> files_written;
};

// One connection a kernel opened through the egress proxy, allowed or refused (issue 36).
struct egress_attempt {
    std::chrono::system_clock::time_point finished;
    std::string user;
    std::string kernel_id;
    std::string method;  // "CONNECT", "GET", ...; "" when no request was read
    std::string host;    // as the kernel wrote it
    std::uint16_t port = 0;
    std::string address;  // connected to, or ""
    bool allowed = false;
    std::string rule;
    std::string reason;
    unsigned status = 0;
    std::string ended;  // "", "idle", "stopped"
    std::uint64_t bytes_up = 0;
    std::uint64_t bytes_down = 0;
    std::chrono::duration<double> duration{};
};

// A context's state saved or brought back (issue 37): "snapshot", "restore", "fork", "pause",
// "resume" or "expire" (a paused context deleted at --paused-ttl), by whom ("" for the
// server's own: --pause-idle, --paused-ttl), with what the operation says
// of itself (its snapshot's id, size, time, what it could not carry).
struct context_operation {
    std::chrono::system_clock::time_point time;
    std::string operation;
    std::string user;
    std::string context_id;
    nlohmann::json details = nlohmann::json::object();
};

struct start_result {
    std::uint64_t seq = 0;  // the run line's, when written
    std::string error;      // else why it could not be: with --audit-required, do not run it
};

class audit_log {
public:
    // Loads the key (or creates it), finds the chain's end and checks it against the anchor,
    // then writes an "open" line. Throws std::runtime_error naming the file when the log cannot
    // be opened, its last line is not a line of this key's chain, the key or the anchor is not
    // valid, or (with `required`) the log ends before the anchor: lines were cut from it. That
    // last finding is written into the log first, so the cut stays on record.
    audit_log(audit_settings settings, logger log);
    ~audit_log();
    audit_log(const audit_log&) = delete;
    audit_log& operator=(const audit_log&) = delete;

    const audit_settings& settings() const { return settings_; }

    // The run line, written now; an execution runs only after it (or with required=off).
    [[nodiscard]] start_result record_start(const execution_start& start);
    // The end line; "" or why it could not be written.
    [[nodiscard]] std::string record_end(const execution_end& end);

    // An "egress" line; "" or why it could not be written (the connection is over by then:
    // it is logged, not refused).
    [[nodiscard]] std::string record_egress(const egress_attempt& attempt);

    // A "context" line; "" or why it could not be written (the operation is done by then: it
    // is logged, not undone).
    [[nodiscard]] std::string record_operation(const context_operation& op);

    // Makes the lines written so far durable (fdatasync) and moves the anchor to the last.
    void sync();

    // The latest executions, newest first, at most `limit` (an admin's overview): each run
    // line as in the file, with "seq" and the code cut to its first 500 characters, and its end
    // line's status, duration, output and files once it ended ("running" until then). Kept in
    // memory, so no read of the file (which may be rotated away or unreadable to us) is needed.
    nlohmann::json latest(std::size_t limit) const;

    // The record a run line holds before it is chained (public for tests).
    nlohmann::json start_json(const execution_start& start) const;

    // Where the anchor of the chain under `key_file` is kept: beside it, "<name>.anchor".
    static std::filesystem::path anchor_file(const std::filesystem::path& key_file);

private:
    struct appended {
        std::uint64_t seq = 0;
        std::string error;
    };
    // `seq` 0: the next one.
    [[nodiscard]] appended append_locked(const nlohmann::json& record, std::uint64_t seq = 0);
    // "" or why not.
    [[nodiscard]] std::string write_locked(const std::string& text);
    [[nodiscard]] std::string rotate_locked();
    void open_locked();
    bool anchored_line_present(const chain_anchor& anchor) const;
    void write_anchor(const chain_anchor& anchor);
    void remember_locked(const nlohmann::json& record, std::uint64_t seq);

    const audit_settings settings_;
    logger log_;
    const chain_key key_;
    const std::filesystem::path anchor_path_;

    mutable std::mutex mutex_;  // the file, the chain's end, the latest lines
    unique_fd fd_;
    std::uint64_t size_ = 0;
    std::uint64_t end_seq_ = 0;
    std::string end_mac_ = std::string(genesis_mac);
    std::uint64_t end_offset_ = 0;  // where that line ends, in the file that holds it
    std::string last_error_;
    std::deque<nlohmann::json> latest_;  // newest first, at most latest_kept entries

    std::mutex anchor_mutex_;  // the anchor file; only ever moved forward
    std::atomic<std::uint64_t> anchored_seq_ = 0;

    std::mutex wake_mutex_;
    std::condition_variable_any wake_;
    std::jthread sync_thread_;  // last: stopped and joined first
};

// `callisto audit-verify --key FILE [--anchor FILE] FILE...`: the files in chain order (oldest
// first). Returns the exit code (verdict) and writes each problem, each thing not proven and
// a summary.
int verify_files(const chain_key& key, const std::optional<chain_anchor>& anchor,
                 const std::vector<std::string>& files, std::string& report);

// A key file's key, or why not (for audit-verify: no check of its owner or mode).
std::optional<chain_key> read_key_file(const std::filesystem::path& file, std::string& why);
// An anchor file's anchor under `key`, or why not.
std::optional<chain_anchor> read_anchor_file(const std::filesystem::path& file,
                                             const chain_key& key, std::string& why);

}  // namespace callisto::gateway::audit
