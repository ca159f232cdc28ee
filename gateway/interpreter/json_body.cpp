#include "gateway/interpreter/json_body.hpp"

namespace callisto::gateway::interpreter {

std::optional<nlohmann::json> parse_json_body(std::string_view body, std::string& error) {
    auto doc = nlohmann::json::parse(body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
        error = "request body must be a JSON object";
        return std::nullopt;
    }
    return doc;
}

}  // namespace callisto::gateway::interpreter
