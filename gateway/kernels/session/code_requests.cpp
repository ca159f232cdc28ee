#include "gateway/kernels/session/code_requests.hpp"

namespace callisto::gateway::kernels {

namespace {

std::string string_field(const nlohmann::json& j, const char* name) {
    if (!j.is_object()) return {};
    auto it = j.find(name);
    if (it == j.end()) return {};
    // A field of another type is recorded as the client sent it: the kernel decides what it
    // makes of it, and the record must not hide it.
    return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace

bool may_run_code(std::string_view msg_type) {
    return msg_type == "execute_request" || msg_type == "debug_request";
}

code_request_verdict classify_code_request(kernelproto::channel ch, std::string_view msg_type,
                                           const nlohmann::json& content) {
    code_request_verdict v;
    if (msg_type == "execute_request") {
        if (ch != kernelproto::channel::shell) {
            v.refused = "execute_request is accepted on the shell channel only";
            return v;
        }
        code_request r{"execute_request", string_field(content, "code"), nullptr};
        if (r.code.find('\0') != std::string::npos) {
            // ipykernel's handler fails on it (Python compiles no source with a NUL) and sends
            // no execute_reply, so the client would wait for ever.
            v.refused = "'code' contains a NUL character, which the kernel cannot run";
            return v;
        }
        if (content.is_object()) {
            auto it = content.find("user_expressions");
            if (it != content.end() && !(it->is_object() && it->empty()) && !it->is_null())
                r.user_expressions = *it;
        }
        v.runs = std::move(r);
        return v;
    }
    if (msg_type != "debug_request") return v;
    const std::string command = string_field(content, "command");
    const nlohmann::json arguments = content.is_object() && content.contains("arguments")
                                         ? content["arguments"]
                                         : nlohmann::json();
    std::string code;
    if (command == "evaluate") {
        code = string_field(arguments, "expression");
    } else if (command == "setExpression") {
        code = string_field(arguments, "expression") + " = " + string_field(arguments, "value");
    } else if (command == "setVariable") {
        code = string_field(arguments, "name") + " = " + string_field(arguments, "value");
    } else {
        return v;
    }
    v.runs = code_request{"debug_request " + command, std::move(code), nullptr};
    return v;
}

}  // namespace callisto::gateway::kernels
