// One MCP HTTP body as JSON-RPC: request, notification, response or invalid, never a throw.
#include <string_view>

#include "gateway/mcp/json_rpc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    auto m = callisto::gateway::mcp::parse_rpc_message(body);
    if (m.kind != callisto::gateway::mcp::message_kind::invalid && !m.params.is_object())
        __builtin_trap();  // valid messages always carry an object
    return 0;
}
