#include "gateway/mcp/tool_content.hpp"

#include <cctype>
#include <cstdint>

#include "common/encoding.hpp"
#include "common/media_types.hpp"

namespace callisto::gateway::mcp {

namespace {

// The raster images an MCP client shows as images; anything else is text or a link.
std::optional<std::string_view> image_mime_for(std::string_view path) {
    const auto type = media_type_of(path);
    if (type && (*type == "image/png" || *type == "image/jpeg" || *type == "image/gif" ||
                 *type == "image/webp"))
        return type;
    return std::nullopt;
}

std::string string_or_dump(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {  // Jupyter may split text into a list of lines
        std::string out;
        for (const auto& part : v) out += part.is_string() ? part.get<std::string>() : part.dump();
        return out;
    }
    return v.dump();
}

void section(std::string& out, std::string_view title, std::string_view body) {
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += "--- ";
    out += title;
    out += " ---\n";
    out += body;
}

// A value moved to the workdir is {"file", "bytes"} instead of the data itself.
bool moved(const nlohmann::json& v) { return v.is_object() && v.contains("file"); }

}  // namespace

bool is_utf8_text(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == 0) return false;
        std::size_t n = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07;
        } else
            return false;
        for (std::size_t k = 1; k <= n; ++k) {
            if (i + k >= s.size()) return false;
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        // Overlong forms, surrogates and values beyond U+10FFFF are not UTF-8.
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return false;
        i += n + 1;
    }
    return true;
}

nlohmann::json text_tool_result(std::string text, bool is_error) {
    return {{"content", nlohmann::json::array({{{"type", "text"}, {"text", std::move(text)}}})},
            {"isError", is_error}};
}

nlohmann::json execution_tool_result(const nlohmann::json& e) {
    const std::string status = e.value("status", "error");
    nlohmann::json images = nlohmann::json::array();
    std::string text;

    text = "status: " + status;
    if (e.contains("execution_count") && e["execution_count"].is_number_integer())
        text += " (execution_count " + std::to_string(e["execution_count"].get<long long>()) + ")";
    if (status == "timeout" || status == "interrupted") {
        const bool kept = e.value("state_preserved", false);
        text += kept ? "; the kernel's state was kept"
                     : "; the kernel was restarted, its variables and imports are lost";
    }
    text += "\n";

    if (auto out = e.value("stdout", std::string()); !out.empty()) section(text, "stdout", out);
    if (auto err = e.value("stderr", std::string()); !err.empty()) section(text, "stderr", err);

    if (e.contains("results") && e["results"].is_array()) {
        for (const auto& r : e["results"]) {
            if (!r.is_object() || !r.contains("data") || !r["data"].is_object()) continue;
            const auto& data = r["data"];
            bool shown = false;
            for (const char* mime : {"image/png", "image/jpeg"}) {
                if (!data.contains(mime)) continue;
                const auto& v = data[mime];
                if (v.is_string()) {
                    // Jupyter wraps base64 in lines sometimes; MCP wants it bare.
                    std::string b64;
                    for (char c : v.get_ref<const std::string&>())
                        if (c != '\n' && c != '\r') b64 += c;
                    images.push_back(
                        {{"type", "image"}, {"data", std::move(b64)}, {"mimeType", mime}});
                    shown = true;
                } else if (moved(v)) {
                    section(text, "result",
                            std::string(mime) + " too large to return inline; saved as " +
                                v["file"].get<std::string>() + " (read_file reads it)\n");
                    shown = true;
                }
                break;
            }
            if (data.contains("text/plain") && !shown) {
                const auto& v = data["text/plain"];
                section(text, "result",
                        moved(v) ? "text too large to return inline; saved as " +
                                       v["file"].get<std::string>() + "\n"
                                 : string_or_dump(v) + "\n");
                shown = true;
            }
            if (!shown) {
                std::string kinds;
                for (auto& [mime, v] : data.items()) kinds += (kinds.empty() ? "" : ", ") + mime;
                section(text, "result", "a result of type " + kinds + " (no text form)\n");
            }
        }
    }

    if (e.contains("error") && e["error"].is_object()) {
        const auto& err = e["error"];
        std::string body;
        if (err.contains("traceback") && err["traceback"].is_array() && !err["traceback"].empty()) {
            for (const auto& line : err["traceback"])
                if (line.is_string()) body += line.get<std::string>() + "\n";
        } else {
            body = err.value("name", std::string("Error")) + ": " +
                   err.value("value", std::string()) + "\n";
        }
        section(text, "error", body);
    }

    nlohmann::json content = nlohmann::json::array({{{"type", "text"}, {"text", text}}});
    for (auto& img : images) content.push_back(std::move(img));
    return {{"content", std::move(content)}, {"isError", status != "ok"}};
}

nlohmann::json file_list_tool_result(const nlohmann::json& files, bool truncated) {
    std::string text;
    for (const auto& f : files) {
        const std::string type = f.value("type", "other");
        text += f.value("path", std::string());
        if (type == "directory")
            text += "/";
        else if (type == "file")
            text += "  (" + std::to_string(f.value("size", 0ull)) + " bytes)";
        else
            text += "  (" + type + ")";
        text += "\n";
    }
    if (text.empty()) text = "(the working directory is empty)\n";
    if (truncated) text += "[... the listing was cut here ...]\n";
    return text_tool_result(std::move(text));
}

nlohmann::json file_tool_result(std::string_view path, const std::string& bytes) {
    if (const auto image = image_mime_for(path))
        return {{"content", nlohmann::json::array({{{"type", "image"},
                                                    {"data", encode_base64(bytes)},
                                                    {"mimeType", std::string(*image)}}})},
                {"isError", false}};
    if (is_utf8_text(bytes)) return text_tool_result(bytes);
    std::string uri = "callisto://workdir/";
    for (unsigned char c : path) {
        static const char* hex = "0123456789ABCDEF";
        if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
            uri += static_cast<char>(c);
        } else {
            uri += '%';
            uri += hex[c >> 4];
            uri += hex[c & 15];
        }
    }
    return {{"content", nlohmann::json::array({{{"type", "resource"},
                                                {"resource",
                                                 {{"uri", uri},
                                                  {"mimeType", "application/octet-stream"},
                                                  {"blob", encode_base64(bytes)}}}}})},
            {"isError", false}};
}

namespace {

std::string id_of(const nlohmann::json& model) {
    return model.is_object() ? model.value("id", std::string()) : std::string();
}

// What a model needs to go on: the ids it uses next, in a sentence.
std::string summary_of(std::string_view tool, const nlohmann::json& body) {
    if (tool == "snapshot_context")
        return "snapshot " + id_of(body) + " saved (" +
               std::to_string(body.value("size", std::uint64_t{0})) +
               " bytes); restore_snapshot brings it back into a new context.";
    if (tool == "list_snapshots")
        return std::to_string(body.is_array() ? body.size() : 0) + " snapshot(s).";
    if (tool == "delete_snapshot") return "the snapshot is deleted.";
    if (tool == "restore_snapshot")
        return "restored into the new context " + id_of(body) +
               ": run code there with run_code's context_id.";
    if (tool == "fork_context") {
        std::string ids;
        const auto& made =
            body.is_object() && body.contains("contexts") ? body["contexts"] : nlohmann::json();
        for (const auto& c : made) ids += (ids.empty() ? "" : ", ") + id_of(c);
        return std::to_string(made.is_array() ? made.size() : 0) + " new context(s): " + ids +
               "; run code in each with run_code's context_id.";
    }
    if (tool == "pause_context")
        return "context " + id_of(body) +
               " is paused: its next run_code with this context_id, or resume_context, brings "
               "it back.";
    if (tool == "resume_context") {
        if (body.is_object() && body.contains("resumed") && body["resumed"].is_object())
            return "context " + id_of(body) + " is live again (resumed in " +
                   std::to_string(body["resumed"].value("duration_ms", std::int64_t{0})) + " ms).";
        return "context " + id_of(body) + " was live; nothing to resume.";
    }
    return "done.";
}

}  // namespace

nlohmann::json operation_tool_result(std::string_view tool, int status,
                                     const nlohmann::json& body) {
    if (status < 200 || status > 299) {
        const std::string why =
            body.is_object() && body.contains("message") && body["message"].is_string()
                ? body["message"].get<std::string>()
                : "the server answered HTTP " + std::to_string(status);
        return text_tool_result(std::string(tool) + " failed: " + why, true);
    }
    std::string text = summary_of(tool, body);
    if (!body.is_null() && !body.is_discarded())
        text += "\n" + body.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    return text_tool_result(std::move(text));
}

}  // namespace callisto::gateway::mcp
