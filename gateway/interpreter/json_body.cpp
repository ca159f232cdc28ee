#include "gateway/interpreter/json_body.hpp"

#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::interpreter {

std::optional<nlohmann::json> parse_json_body(std::string_view body, std::string& error) {
    auto parsed = kernelproto::parse_untrusted_json(body);
    if (!parsed.ok() || !parsed.value.is_object()) {
        error = "request body must be a JSON object";
        if (!parsed.ok()) error += " (" + parsed.problem() + ")";
        return std::nullopt;
    }
    return std::move(parsed.value);
}

}  // namespace callisto::gateway::interpreter
