#pragma once
// What carries out an MCP session's tool calls. The real one runs them in an interpreter
// context (context_tools); unit tests put a scripted one in its place.

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "gateway/mcp/mcp_tools.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::mcp {

class tool_backend {
public:
    virtual ~tool_backend() = default;
    // `done` gets a tool result ({"content", "isError"}); it may run on any thread. Failures
    // of the tool (a missing file, a quota) are results with isError, not exceptions.
    // `call_id` is the JSON-RPC request id (as JSON text), the handle of cancel().
    virtual void call(const std::string& call_id, tool_call call,
                      std::function<void(nlohmann::json result)> done) = 0;
    // The client gave up on a call (notifications/cancelled): stop its work if it can. The
    // call still answers (the client ignores it). Unknown or finished ids are ignored.
    virtual void cancel(const std::string& call_id) = 0;
    // The session ended: release what the tools hold. Idempotent.
    virtual void close() = 0;
};

using tool_backend_factory =
    std::function<std::shared_ptr<tool_backend>(const user& owner, const std::string& session_id)>;

}  // namespace callisto::gateway::mcp
