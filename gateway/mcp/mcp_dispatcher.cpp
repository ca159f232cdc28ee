#include "gateway/mcp/mcp_dispatcher.hpp"

namespace callisto::gateway::mcp {

void dispatch_request(const rpc_message& request, tool_backend& tools, const tool_limits& limits,
                      std::function<void(nlohmann::json)> reply) {
    const auto& id = request.id;
    const auto& method = request.method;
    if (method == "ping") return reply(rpc_result(id, nlohmann::json::object()));
    if (method == "tools/list") return reply(rpc_result(id, {{"tools", tool_definitions(limits)}}));
    if (method == "tools/call") {
        std::string error;
        auto call = parse_tool_call(request.params, limits, error);
        if (!call) return reply(rpc_error_object(id, rpc_error::invalid_params, error));
        tools.call(id.dump(), std::move(*call),
                   [id, reply = std::move(reply)](nlohmann::json result) {
                       reply(rpc_result(id, std::move(result)));
                   });
        return;
    }
    if (method == "initialize")
        return reply(rpc_error_object(id, rpc_error::invalid_request,
                                      "this session is already initialized; to start a new one, "
                                      "send initialize without an Mcp-Session-Id header"));
    reply(rpc_error_object(
        id, rpc_error::method_not_found,
        "method not found: " + method + " (Callisto offers ping, tools/list and tools/call)"));
}

}  // namespace callisto::gateway::mcp
