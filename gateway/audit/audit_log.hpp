#pragma once
// --audit-log: one chained JSON line per execution, from every API (the Jupyter WebSocket,
// /v1, MCP). Appends from any thread; rotates by size, the chain continuing into the next file;
// keeps a bounded number of rotated files. When recording is required, an execution that could
// not be recorded does not run: refuse_reason() is asked before each one.

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/unique_fd.hpp"
#include "gateway/audit/audit_chain.hpp"

namespace callisto::gateway::audit {

struct audit_settings {
    std::filesystem::path file;      // empty: no audit log
    bool record_code = true;         // false: only the code's sha256 and size (--audit-code=hash)
    std::uint64_t rotate_bytes = 0;  // a file past this is rotated; 0: never
    std::size_t keep = 0;            // rotated files kept (FILE.1 newest); 0: all
    bool required = true;            // refuse executions that cannot be recorded
};

// What one execution did, as the API that ran it knows it.
struct execution_entry {
    std::chrono::system_clock::time_point started;
    std::string user;
    std::string api;  // "jupyter", "v1", "mcp"
    std::string kernel_id;
    std::string context_id;    // /v1 and MCP; empty for the Jupyter WebSocket
    std::string execution_id;  // the execute_request's msg_id, or the /v1 execution id
    // On the Jupyter WebSocket, what asked the kernel to run code when it was not an
    // execute_request ("debug_request evaluate", ...; kernels/code_requests.hpp); else empty.
    std::string request;
    std::string code;
    nlohmann::json user_expressions;  // an execute_request's, evaluated after its code; or null
    std::string status;               // "ok", "error", "aborted", "timeout", "cancelled", ...
    std::chrono::duration<double> duration{};
    std::uint64_t output_bytes = 0;
    std::vector<std::string> files_written;
};

class audit_log {
public:
    // Creates the file (0600) or continues its chain; throws std::runtime_error naming the
    // file when it cannot be written or its last line is not a complete audit line.
    explicit audit_log(audit_settings settings);

    const audit_settings& settings() const { return settings_; }

    // "" when an execution may run; else why it may not (a write failed, the disk is full).
    std::string refuse_reason() const;

    // Appends the entry's line; "" or why it could not.
    std::string record(const execution_entry& entry);

    // The latest lines written, newest first, at most `limit` (an admin's overview): as in the
    // file, with "seq", and code cut to its first 500 characters. Kept in memory, so no read
    // of the file (which may be rotated away or unreadable to us) is needed.
    nlohmann::json latest(std::size_t limit) const;

    // The JSON object a line holds before it is chained (public for tests).
    nlohmann::json to_json(const execution_entry& entry) const;

private:
    std::string rotate_locked();
    void open_locked();
    void remember_locked(nlohmann::json record, std::uint64_t seq);

    const audit_settings settings_;
    mutable std::mutex mutex_;
    unique_fd fd_;
    std::uint64_t size_ = 0;
    chain_end end_;
    std::string last_error_;
    std::deque<nlohmann::json> latest_;  // newest first, at most latest_kept entries
};

// `callisto audit-verify FILE…`: the files in chain order (oldest first). Returns the exit
// code (0 intact, 1 broken or unreadable) and writes a sentence per problem or the summary.
int verify_files(const std::vector<std::string>& files, std::string& report);

}  // namespace callisto::gateway::audit
