#include "gateway/e2b/watch_rpc.hpp"

#include <sys/inotify.h>

#include <nlohmann/json.hpp>

#include "gateway/e2b/connect_envelope.hpp"
#include "gateway/e2b/envd_files.hpp"

namespace callisto::gateway::e2b {

namespace {

using nlohmann::json;

std::string frame(const json& message) {
    return encode_envelope(0, message.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

std::optional<watch_request> parse_watch_dir(std::string_view message, connect_code& code,
                                             std::string& error) {
    auto refuse = [&](connect_code c, std::string why) -> std::optional<watch_request> {
        code = c;
        error = std::move(why);
        return std::nullopt;
    };
    const json msg = json::parse(message, nullptr, false);
    if (msg.is_discarded() || !msg.is_object())
        return refuse(connect_code::invalid_argument, "the request must be a JSON object");
    const auto path = msg.find("path");
    if (path == msg.end() || !path->is_string())
        return refuse(connect_code::invalid_argument, "'path' is required, a string");
    watch_request out;
    for (const char* flag : {"recursive", "includeEntry", "allowNetworkMounts"}) {
        const auto f = msg.find(flag);
        if (f == msg.end() || f->is_null()) continue;
        if (!f->is_boolean())
            return refuse(connect_code::invalid_argument,
                          std::string("'") + flag + "' must be a boolean");
        if (std::string_view(flag) == "recursive") out.recursive = f->get<bool>();
        if (std::string_view(flag) == "includeEntry" && f->get<bool>())
            return refuse(connect_code::unimplemented,
                          "entries in watch events are not served by this gateway");
    }
    envd_error e;
    auto where = resolve_envd_path(path->get_ref<const std::string&>(), e);
    if (!where) return refuse(e.code, "'path': " + e.message);
    out.path = std::move(*where);
    return out;
}

std::optional<std::string> parse_watcher_id(std::string_view message, connect_code& code,
                                            std::string& error) {
    const json msg = json::parse(message, nullptr, false);
    const auto id = msg.is_object() ? msg.find("watcherId") : msg.end();
    if (!msg.is_object() || id == msg.end() || !id->is_string() ||
        id->get_ref<const std::string&>().empty()) {
        code = connect_code::invalid_argument;
        error = "the request must be a JSON object with 'watcherId', a string";
        return std::nullopt;
    }
    return id->get<std::string>();
}

json watcher_events_message(const std::vector<watch_event>& events) {
    json list = json::array();
    for (const auto& e : events) list.push_back({{"name", e.name}, {"type", e.type}});
    return {{"events", list}};
}

std::vector<std::string> event_types_of(std::uint32_t mask) {
    std::vector<std::string> out;
    if (mask & (IN_CREATE | IN_MOVED_TO)) out.emplace_back("EVENT_TYPE_CREATE");
    if (mask & IN_MODIFY) out.emplace_back("EVENT_TYPE_WRITE");
    if (mask & (IN_DELETE | IN_DELETE_SELF)) out.emplace_back("EVENT_TYPE_REMOVE");
    if (mask & (IN_MOVED_FROM | IN_MOVE_SELF)) out.emplace_back("EVENT_TYPE_RENAME");
    if (mask & IN_ATTRIB) out.emplace_back("EVENT_TYPE_CHMOD");
    return out;
}

std::string watch_start_frame() { return frame({{"start", json::object()}}); }

std::string watch_event_frame(std::string_view name, std::string_view type) {
    return frame({{"filesystem", {{"name", name}, {"type", type}}}});
}

std::string watch_keepalive_frame() { return frame({{"keepalive", json::object()}}); }

}  // namespace callisto::gateway::e2b
