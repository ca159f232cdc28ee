#include "gateway/mcp/json_rpc.hpp"

#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::mcp {

namespace {

rpc_message invalid(int code, std::string why, nlohmann::json id = nullptr) {
    rpc_message m;
    m.kind = message_kind::invalid;
    m.error_code = code;
    m.error = std::move(why);
    m.id = std::move(id);
    return m;
}

// MCP: "Requests MUST include a string or integer ID", and it must not be null.
bool valid_id(const nlohmann::json& id) {
    return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

}  // namespace

rpc_message parse_rpc_message(std::string_view body) {
    auto parsed = kernelproto::parse_untrusted_json(body);
    if (!parsed.ok()) return invalid(rpc_error::parse_error, "the body is " + parsed.problem());
    auto& doc = parsed.value;
    if (doc.is_array())
        return invalid(rpc_error::invalid_request,
                       "JSON-RPC batches are not supported (MCP 2025-06-18 removed them): send "
                       "one message per POST");
    if (!doc.is_object())
        return invalid(rpc_error::invalid_request, "a JSON-RPC message is a JSON object");

    // The id, when usable, goes back in the error so the client can match it.
    nlohmann::json id = nullptr;
    const bool has_id = doc.contains("id");
    if (has_id && valid_id(doc["id"])) id = doc["id"];

    if (!doc.contains("jsonrpc") || doc["jsonrpc"] != "2.0")
        return invalid(rpc_error::invalid_request, "\"jsonrpc\" must be \"2.0\"", id);
    if (has_id && !valid_id(doc["id"]))
        return invalid(rpc_error::invalid_request, "\"id\" must be a string or an integer");

    if (!doc.contains("method")) {
        // A response to a request of ours (we send none, but a client may answer anyway).
        const bool result = doc.contains("result"), error = doc.contains("error");
        if (has_id && result != error) {
            rpc_message m;
            m.kind = message_kind::response;
            m.id = id;
            return m;
        }
        return invalid(rpc_error::invalid_request,
                       "a request needs a \"method\"; a response needs an \"id\" and one of "
                       "\"result\" or \"error\"",
                       id);
    }
    if (!doc["method"].is_string() || doc["method"].get_ref<const std::string&>().empty())
        return invalid(rpc_error::invalid_request, "\"method\" must be a non-empty string", id);

    rpc_message m;
    m.kind = has_id ? message_kind::request : message_kind::notification;
    m.id = id;
    m.method = doc["method"].get<std::string>();
    if (doc.contains("params")) {
        if (!doc["params"].is_object())
            return invalid(rpc_error::invalid_params, "\"params\" must be an object", id);
        m.params = std::move(doc["params"]);
    }
    return m;
}

nlohmann::json rpc_result(const nlohmann::json& id, nlohmann::json result) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json rpc_error_object(const nlohmann::json& id, int code, std::string message) {
    return {{"jsonrpc", "2.0"},
            {"id", id},
            {"error", {{"code", code}, {"message", std::move(message)}}}};
}

}  // namespace callisto::gateway::mcp
