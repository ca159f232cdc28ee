#pragma once
// The executions Jupyter clients run over a kernel WebSocket, as the kernel session relaying
// them sees them: execute_request out, output back, execute_reply. The interpreter API records
// its own executions; these are the rest, for the metrics and the audit log. The session owns
// one tracker on its strand and tells the server's execution_observer what finished.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelproto/channel.hpp"

namespace callisto::gateway::kernels {

struct websocket_execution {
    std::string kernel_id;
    std::string kernelspec;
    std::string user;            // who sent it (an admin debugging someone's kernel is named)
    std::string msg_id;          // the request's
    std::string request_header;  // its header (JSON), to answer it when the kernel cannot
    kernelproto::channel request_channel = kernelproto::channel::shell;
    std::string kind;  // code_request::kind: "execute_request", "debug_request evaluate", ...
    // What it runs: given to the observer before the kernel has it, then let go, so pending
    // executions hold no code (the observer recorded what it needs).
    std::string code;
    nlohmann::json user_expressions;  // an execute_request's, evaluated after its code
    std::uint64_t record_seq = 0;     // the observer's record of its start (an audit line), or 0
    // The reply's status (ok, error, aborted; a debug_reply's success is ok or error), or
    // "lost" when the kernel died or restarted before it replied.
    std::string status;
    std::chrono::system_clock::time_point started;
    std::chrono::steady_clock::time_point started_steady;
    std::chrono::milliseconds duration{0};
    std::size_t output_bytes = 0;  // iopub messages with this request as their parent
};

// What the server does with them. Called on the kernel's strand.
class execution_observer {
public:
    virtual ~execution_observer() = default;
    // Told before the request reaches the kernel, with its code: "" lets it through (the
    // observer may set e.record_seq); otherwise why it may not run (an audit log that could not
    // record it, with --audit-required).
    [[nodiscard]] virtual std::string starting(websocket_execution& e) = 0;
    // Told when it ended (replied, lost), without its code.
    virtual void finished(const websocket_execution& e) = 0;
};

class websocket_executions {
public:
    // A kernel that never replies must not grow the gateway: beyond max_pending, the oldest
    // pending execution is given up (reported as lost).
    explicit websocket_executions(std::size_t max_pending = 1024) : max_pending_(max_pending) {}

    // Returns the executions given up to make room.
    std::vector<websocket_execution> started(websocket_execution e);
    void output(const std::string& parent_msg_id, std::size_t bytes);
    // The reply to a tracked request: the finished execution; nullopt for other replies.
    std::optional<websocket_execution> replied(const std::string& parent_msg_id,
                                               std::string status);
    // The kernel died or restarted: every pending execution, as lost.
    std::vector<websocket_execution> lose_all();

    std::size_t pending() const { return pending_.size(); }

private:
    websocket_execution finish(std::list<websocket_execution>::iterator it, std::string status);

    std::size_t max_pending_;
    std::list<websocket_execution> pending_;  // oldest first
    std::unordered_map<std::string, std::list<websocket_execution>::iterator> by_msg_id_;
};

}  // namespace callisto::gateway::kernels
