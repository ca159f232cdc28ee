#include "gateway/interpreter/context_request.hpp"

#include <nlohmann/json.hpp>

#include "gateway/interpreter/context_fields.hpp"
#include "gateway/interpreter/execution_request.hpp"
#include "gateway/interpreter/json_body.hpp"

namespace callisto::gateway::interpreter {

std::optional<context_request> parse_context_request(std::string_view body, std::string& error) {
    context_request req;
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return req;
    auto doc = parse_json_body(body, error);
    if (!doc) return std::nullopt;
    for (auto& [name, value] : doc->items()) {
        if (!is_context_field(name) && name != "language" && name != "from_snapshot") {
            error = "unknown field '" + name + "'";
            return std::nullopt;
        }
    }
    if (!read_context_fields(*doc, req, error)) return std::nullopt;
    if (doc->contains("language") && !(*doc)["language"].is_null()) {
        const auto& l = (*doc)["language"];
        if (!l.is_string() ||
            !(req.language = languages::parse_execution_language(l.get<std::string>()))) {
            error = "'language' must be one of " + language_choices();
            return std::nullopt;
        }
    }
    if (doc->contains("from_snapshot") && !(*doc)["from_snapshot"].is_null()) {
        const auto& s = (*doc)["from_snapshot"];
        if (!s.is_string() || s.get<std::string>().empty() || s.get<std::string>().size() > 64) {
            error = "'from_snapshot' must be a snapshot id (GET /v1/snapshots lists them)";
            return std::nullopt;
        }
        req.from_snapshot = s.get<std::string>();
    }
    return req;
}

}  // namespace callisto::gateway::interpreter
