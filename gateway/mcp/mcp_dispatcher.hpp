#pragma once
// Answers the JSON-RPC requests of an established MCP session: ping, tools/list, tools/call;
// anything else is "method not found". No I/O of its own: the tools are a tool_backend.

#include <functional>

#include <nlohmann/json.hpp>

#include "gateway/mcp/json_rpc.hpp"
#include "gateway/mcp/mcp_tools.hpp"
#include "gateway/mcp/tool_backend.hpp"

namespace callisto::gateway::mcp {

// `request.kind` is request. `reply` gets the JSON-RPC response (result or error), once, from
// this thread or from the backend's.
void dispatch_request(const rpc_message& request, tool_backend& tools, const tool_limits& limits,
                      std::function<void(nlohmann::json)> reply);

}  // namespace callisto::gateway::mcp
