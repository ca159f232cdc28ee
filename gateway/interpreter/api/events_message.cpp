#include "gateway/interpreter/api/events_message.hpp"

#include <nlohmann/json.hpp>

#include "gateway/http/router.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::interpreter {

namespace {

bool is_printable_id(const std::string& s) {
    if (s.empty() || s.size() > 128) return false;
    for (unsigned char c : s)
        if (c <= 0x20 || c >= 0x7f) return false;
    return true;
}

}  // namespace

std::optional<events_command> parse_events_command(std::string_view text,
                                                   const execution_request_limits& limits,
                                                   std::string& error, std::string& request_id) {
    request_id.clear();
    auto parsed = kernelproto::parse_untrusted_json(text);
    auto& doc = parsed.value;
    if (!parsed.ok() || !doc.is_object()) {
        error = "a message must be a JSON object with a \"type\"";
        if (!parsed.ok()) error += " (" + parsed.problem() + ")";
        return std::nullopt;
    }
    events_command cmd;
    if (doc.contains("request_id") && !doc["request_id"].is_null()) {
        const auto& r = doc["request_id"];
        if (!r.is_string() || !is_printable_id(r.get<std::string>())) {
            error = "'request_id' must be 1 to 128 printable ASCII characters without spaces";
            return std::nullopt;
        }
        cmd.request_id = request_id = r.get<std::string>();
    }
    if (!doc.contains("type") || !doc["type"].is_string()) {
        error = "'type' is required: \"execute\", \"follow\" or \"interrupt\"";
        return std::nullopt;
    }
    const auto type = doc["type"].get<std::string>();
    if (type == "execute") {
        cmd.type = events_command::kind::execute;
        auto req = execution_request_from_json(doc, "", limits, error, {"type", "request_id"});
        if (!req) return std::nullopt;
        cmd.request = std::move(*req);
        return cmd;
    }
    if (type != "follow" && type != "interrupt") {
        error = "unknown message type '" + type.substr(0, 64) +
                "': \"execute\", \"follow\" or \"interrupt\"";
        return std::nullopt;
    }
    cmd.type = type == "follow" ? events_command::kind::follow : events_command::kind::interrupt;
    for (auto& [name, value] : doc.items()) {
        if (name != "type" && name != "request_id" && name != "execution_id") {
            error = "unknown field '" + name.substr(0, 64) + "' in a " + type + " message";
            return std::nullopt;
        }
    }
    if (!doc.contains("execution_id") || !doc["execution_id"].is_string() ||
        !is_valid_kernel_id(doc["execution_id"].get<std::string>())) {
        error = "'execution_id' must be the id of an execution of this context";
        return std::nullopt;
    }
    cmd.execution_id = doc["execution_id"].get<std::string>();
    return cmd;
}

}  // namespace callisto::gateway::interpreter
