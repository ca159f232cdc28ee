#include "gateway/e2b/filesystem_rpc.hpp"

#include <time.h>

#include <cstdio>
#include <optional>
#include <string>

#include "gateway/e2b/e2b_errors.hpp"
#include "gateway/http/beast.hpp"
#include "gateway/http/json_response.hpp"

namespace callisto::gateway::e2b {

namespace {

using nlohmann::json;

const char* type_name(envd_file_type t) {
    switch (t) {
        case envd_file_type::file: return "FILE_TYPE_FILE";
        case envd_file_type::directory: return "FILE_TYPE_DIRECTORY";
        case envd_file_type::symlink: return "FILE_TYPE_SYMLINK";
        case envd_file_type::unspecified: break;
    }
    return "FILE_TYPE_UNSPECIFIED";
}

http_response error_answer(const envd_error& e) { return connect_error(e.code, e.message); }

http_response invalid(std::string message) {
    return connect_error(connect_code::invalid_argument, message);
}

// A string member of the request: "" when absent (proto3's default), nullopt when not a
// string.
std::optional<std::string> string_member(const json& msg, const char* name) {
    auto it = msg.find(name);
    if (it == msg.end() || it->is_null()) return std::string();
    if (!it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

// A uint32 member: a number or, as proto3's JSON also allows, a decimal string.
std::optional<std::uint32_t> uint32_member(const json& msg, const char* name) {
    auto it = msg.find(name);
    if (it == msg.end() || it->is_null()) return 0u;
    if (it->is_number_unsigned()) {
        const auto v = it->get<std::uint64_t>();
        if (v > 0xffffffffu) return std::nullopt;
        return static_cast<std::uint32_t>(v);
    }
    if (it->is_number_integer()) return std::nullopt;  // negative
    if (it->is_string()) {
        const auto& s = it->get_ref<const std::string&>();
        if (s.empty() || s.size() > 10) return std::nullopt;
        std::uint64_t v = 0;
        for (char c : s) {
            if (c < '0' || c > '9') return std::nullopt;
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (v > 0xffffffffu) return std::nullopt;
        return static_cast<std::uint32_t>(v);
    }
    return std::nullopt;
}

// The path member, resolved; nullopt with the answer to give when it is refused.
std::optional<std::string> path_member(const json& msg, const char* name,
                                       std::optional<http_response>& refusal) {
    auto raw = string_member(msg, name);
    if (!raw) {
        refusal = invalid(std::string("'") + name + "' must be a string");
        return std::nullopt;
    }
    if (raw->empty()) {
        refusal = invalid(std::string("'") + name + "' is required");
        return std::nullopt;
    }
    envd_error error;
    auto path = resolve_envd_path(*raw, error);
    if (!path) refusal = error_answer(error);
    return path;
}

http_response ok(const json& message) { return json_response(http::status::ok, message); }

}  // namespace

std::string rfc3339(const struct timespec& t) {
    struct tm tm {};
    const time_t secs = t.tv_sec;
    ::gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::string out = buf;
    if (t.tv_nsec != 0) {
        std::snprintf(buf, sizeof buf, ".%09ld", static_cast<long>(t.tv_nsec));
        out += buf;
    }
    out += 'Z';
    return out;
}

json entry_info_json(const envd_entry& e) {
    json j = {{"name", e.name},
              {"type", type_name(e.type)},
              {"path", e.path},
              {"size", std::to_string(e.size)},
              {"mode", e.mode},
              {"permissions", e.permissions},
              {"owner", e.owner},
              {"group", e.group},
              {"modifiedTime", rfc3339(e.modified)}};
    if (e.symlink_target) j["symlinkTarget"] = *e.symlink_target;
    return j;
}

bool is_connect_json(std::string_view content_type) {
    const auto semi = content_type.find(';');
    auto media = content_type.substr(0, semi);
    while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
    return beast::iequals(media, "application/json");
}

filesystem_rpc::filesystem_rpc(const envd_files& files, std::size_t max_entries)
    : files_(files), max_entries_(max_entries) {}

http_response filesystem_rpc::call(std::string_view method, std::string_view content_type,
                                   std::string_view body) const {
    const bool known = method == "Stat" || method == "ListDir" || method == "MakeDir" ||
                       method == "Move" || method == "Remove";
    if (!known)
        return connect_error(
            connect_code::unimplemented,
            "filesystem.Filesystem/" + std::string(method) + " is not implemented by this gateway");
    if (!is_connect_json(content_type)) {
        auto res = connect_error(connect_code::unimplemented,
                                 "send the request as application/json (Connect's JSON codec)");
        res.result(http::status::unsupported_media_type);
        res.set("Accept-Post", "application/json");
        return res;
    }
    json msg;
    if (body.empty()) {
        msg = json::object();  // every member at its default
    } else {
        msg = json::parse(body, nullptr, false);
        if (msg.is_discarded()) return invalid("the request is not JSON");
        if (!msg.is_object()) return invalid("the request must be a JSON object");
    }
    std::optional<http_response> refusal;
    if (method == "Move") {
        auto from = path_member(msg, "source", refusal);
        if (!from) return std::move(*refusal);
        auto to = path_member(msg, "destination", refusal);
        if (!to) return std::move(*refusal);
        envd_entry entry;
        if (auto e = files_.move(*from, *to, entry)) return error_answer(*e);
        return ok({{"entry", entry_info_json(entry)}});
    }
    auto path = path_member(msg, "path", refusal);
    if (!path) return std::move(*refusal);
    if (method == "Stat") {
        envd_entry entry;
        if (auto e = files_.stat(*path, entry)) return error_answer(*e);
        return ok({{"entry", entry_info_json(entry)}});
    }
    if (method == "ListDir") {
        auto depth = uint32_member(msg, "depth");
        if (!depth) return invalid("'depth' must be an unsigned 32-bit integer");
        std::vector<envd_entry> entries;
        if (auto e = files_.list(*path, *depth, max_entries_, entries)) return error_answer(*e);
        json list = json::array();
        for (const auto& entry : entries) list.push_back(entry_info_json(entry));
        return ok({{"entries", list}});
    }
    if (method == "MakeDir") {
        if (auto e = files_.make_dir(*path)) return error_answer(*e);
        envd_entry entry;
        if (auto e = files_.stat(*path, entry)) return error_answer(*e);
        return ok({{"entry", entry_info_json(entry)}});
    }
    if (auto e = files_.remove(*path)) return error_answer(*e);
    return ok(json::object());
}

}  // namespace callisto::gateway::e2b
