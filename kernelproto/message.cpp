#include "kernelproto/message.hpp"

#include "kernelproto/json_validator.hpp"

#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kernelproto/ids.hpp"
#include "kernelproto/iso_time.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::kernelproto {

namespace {

// Parses text and returns it only when it is a JSON object; never throws.
std::optional<nlohmann::json> parse_object(std::string_view text) {
    auto parsed = parse_untrusted_json(text);
    if (!parsed.ok() || !parsed.value.is_object()) return std::nullopt;
    return std::move(parsed.value);
}

std::string string_field(const nlohmann::json& obj, const char* name) {
    const auto it = obj.find(name);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace

std::size_t message_bytes(const message& m) {
    std::size_t n = m.header.size() + m.parent_header.size() + m.metadata.size() + m.content.size();
    for (const auto& b : m.buffers) n += b.size();
    return n;
}

bool is_json_object(std::string_view text) {
    // A valid document that starts with '{' is an object, so the first significant character
    // settles the type; is_valid_json checks the rest without building a DOM.
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || text[first] != '{') return false;
    return is_valid_json(text);
}

bool parse_routing_fields(message& msg) {
    const auto header = parse_object(msg.header);
    if (!header) return false;
    const auto id = header->find("msg_id");
    const auto type = header->find("msg_type");
    if (id == header->end() || !id->is_string() || type == header->end() || !type->is_string())
        return false;
    const auto parent = parse_object(msg.parent_header);
    if (!parent) return false;

    msg.msg_id = id->get<std::string>();
    msg.msg_type = type->get<std::string>();
    msg.session = string_field(*header, "session");
    msg.parent_msg_id = string_field(*parent, "msg_id");
    return true;
}

message make_message(std::string_view msg_type, const nlohmann::json& content,
                     std::string_view session, std::string_view username, const message* parent) {
    if (!content.is_null() && !content.is_object())
        throw std::invalid_argument("make_message: content must be a JSON object");

    message msg;
    msg.msg_id = new_uuid();
    msg.msg_type = std::string(msg_type);
    msg.session = std::string(session);

    // ordered_json keeps jupyter_client's key order, which makes logs and fixtures readable.
    nlohmann::ordered_json header;
    header["msg_id"] = msg.msg_id;
    header["msg_type"] = msg.msg_type;
    header["username"] = std::string(username);
    header["session"] = msg.session;
    header["date"] = format_iso_time(std::chrono::system_clock::now());
    header["version"] = protocol_version;
    // Replace rather than throw on invalid UTF-8 coming from callers' strings.
    constexpr auto replace = nlohmann::json::error_handler_t::replace;
    msg.header = header.dump(-1, ' ', false, replace);

    if (parent != nullptr) {
        msg.parent_header = parent->header;
        msg.parent_msg_id = parent->msg_id;
    }
    msg.content = content.is_null() ? "{}" : content.dump(-1, ' ', false, replace);
    return msg;
}

}  // namespace callisto::kernelproto
