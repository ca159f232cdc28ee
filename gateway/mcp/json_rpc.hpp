#pragma once
// JSON-RPC 2.0 as MCP uses it: one message per HTTP body, parsed and classified without
// throwing, and the response/error objects built from it. Pure.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace callisto::gateway::mcp {

// The JSON-RPC 2.0 error codes MCP uses, plus the server-defined range for transport errors.
namespace rpc_error {
constexpr int parse_error = -32700;
constexpr int invalid_request = -32600;
constexpr int method_not_found = -32601;
constexpr int invalid_params = -32602;
constexpr int internal_error = -32603;
constexpr int server_error = -32000;  // transport-level: missing session, bad header, limits
}  // namespace rpc_error

enum class message_kind { request, notification, response, invalid };

struct rpc_message {
    message_kind kind = message_kind::invalid;
    nlohmann::json id;  // request/response: a string or an integer; null otherwise
    std::string method;
    nlohmann::json params = nlohmann::json::object();  // always an object when valid
    // kind == invalid: what was wrong, as a JSON-RPC error code and a sentence.
    int error_code = 0;
    std::string error;
};

// Classifies one HTTP body. Never throws. Batches (JSON arrays) are refused: MCP 2025-06-18
// removed them, and one message per POST keeps every answer's HTTP status meaningful.
rpc_message parse_rpc_message(std::string_view body);

nlohmann::json rpc_result(const nlohmann::json& id, nlohmann::json result);
nlohmann::json rpc_error_object(const nlohmann::json& id, int code, std::string message);

}  // namespace callisto::gateway::mcp
