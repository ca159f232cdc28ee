#include "gateway/e2b/execution_lines.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "gateway/interpreter/result_descriptions.hpp"

namespace callisto::gateway::e2b {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

template <class Json = json>
std::string dump(const Json& j) {
    // dump() escapes '\n' inside strings, so a line is one line.
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

constexpr std::pair<std::string_view, std::string_view> mime_names[] = {
    {"text/plain", "text"},
    {"text/html", "html"},
    {"text/markdown", "markdown"},
    {"image/svg+xml", "svg"},
    {"image/png", "png"},
    {"image/jpeg", "jpeg"},
    {"application/pdf", "pdf"},
    {"text/latex", "latex"},
    {"application/json", "json"},
    {"application/javascript", "javascript"},
    // What Callisto's kernels describe of a DataFrame and a figure; and E2B's own formatters'
    // names, should a kernel send them.
    {interpreter::dataframe_description_mime, "data"},
    {interpreter::chart_description_mime, "chart"},
    {"e2b/data", "data"},
    {"e2b/chart", "chart"},
};

// What the SDK takes as `data` ({column: [values]}) or `chart` (an object with its type), or
// nothing. Anything else under those types is the gateway's stand-in for a value over the
// result caps ({"file", "bytes"}, or a note): left out, so the program sees no chart rather
// than a wrong one (the display's png and text are still there). Callisto's kernels send a
// frame as [name, values] pairs, whose order an object of ours would lose.
std::optional<ordered_json> description(std::string_view mime, std::string_view name,
                                        const json& value) {
    if (name == "chart") {
        if (value.is_object() && value.contains("type") && value["type"].is_string())
            return ordered_json(value);
        return std::nullopt;
    }
    if (mime != interpreter::dataframe_description_mime) {  // E2B's own e2b/data
        if (!value.is_object() ||
            !std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_array(); }))
            return std::nullopt;
        return ordered_json(value);
    }
    if (!value.is_array()) return std::nullopt;
    ordered_json columns = ordered_json::object();
    for (const auto& pair : value) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_array())
            return std::nullopt;
        columns[pair[0].get<std::string>()] = ordered_json(pair[1]);
    }
    return columns;
}

std::string text_of(const json& value) {
    if (value.is_string()) return value.get<std::string>();
    // Jupyter allows a string split in a list of lines.
    if (value.is_array()) {
        std::string out;
        for (const auto& part : value)
            if (part.is_string()) out += part.get_ref<const std::string&>();
        return out;
    }
    return dump(value);
}

}  // namespace

ordered_json e2b_result(const json& bundle, bool main_result) {
    ordered_json r = {{"type", "result"}};
    if (bundle.is_object()) {
        for (const auto& [mime, value] : bundle.items()) {
            std::string name = mime;
            for (const auto& [from, to] : mime_names)
                if (mime == from) name = std::string(to);
            // The SDK reads json, data and chart as they come; the rest as strings.
            if (name == "data" || name == "chart") {
                if (auto described = description(mime, name, value)) r[name] = *described;
            } else if (name == "json")
                r[name] = value.is_string() ? ordered_json(value) : ordered_json(dump(value));
            else
                r[name] = text_of(value);
        }
    }
    r["is_main_result"] = main_result;
    return r;
}

std::string keepalive_line() { return R"({"type":"keepalive"})"; }

std::vector<std::string> execution_lines(const json& event) {
    if (!event.is_object()) return {};
    const std::string type = event.value("type", "");
    if (type == "stdout" || type == "stderr")
        return {dump({{"type", type}, {"text", event.value("text", "")}})};
    if (type == "result")
        return {dump(e2b_result(event.value("data", json::object()), event.value("main", false)))};
    if (type == "error") {
        std::string traceback;
        if (const auto it = event.find("traceback"); it != event.end() && it->is_array()) {
            for (const auto& line : *it) {
                if (!line.is_string()) continue;
                if (!traceback.empty()) traceback += '\n';
                traceback += line.get_ref<const std::string&>();
            }
        }
        return {dump({{"type", "error"},
                      {"name", event.value("name", "")},
                      {"value", event.value("value", "")},
                      {"traceback", traceback}})};
    }
    if (type != "end") return {};
    std::vector<std::string> lines;
    const json exec = event.value("execution", json::object());
    const std::string status = exec.value("status", "");
    // A deadline or an interrupt with no error of the kernel's: say so, as E2B's server says
    // an execution was cut short, so the program does not take silence for success.
    const bool has_error = exec.contains("error") && exec["error"].is_object();
    if ((status == "timeout" || status == "interrupted") && !has_error)
        lines.push_back(dump({{"type", "error"},
                              {"name", status == "timeout" ? "TimeoutError" : "KeyboardInterrupt"},
                              {"value", status == "timeout" ? "the execution ran past its deadline"
                                                            : "the execution was interrupted"},
                              {"traceback", ""}}));
    if (const auto it = exec.find("execution_count"); it != exec.end() && it->is_number_integer())
        lines.push_back(dump({{"type", "number_of_executions"}, {"execution_count", *it}}));
    lines.push_back(dump({{"type", status == "ok" || status == "error" || has_error
                                       ? "end_of_execution"
                                       : "unexpected_end_of_execution"}}));
    return lines;
}

}  // namespace callisto::gateway::e2b
