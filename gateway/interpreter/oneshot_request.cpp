#include "gateway/interpreter/oneshot_request.hpp"

#include <nlohmann/json.hpp>

#include "gateway/interpreter/context_fields.hpp"

namespace callisto::gateway::interpreter {

std::optional<oneshot_request> parse_oneshot_request(std::string_view body, std::string_view accept,
                                                     const execution_request_limits& limits,
                                                     std::string& error) {
    auto doc = nlohmann::json::parse(body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
        error = "request body must be a JSON object";
        return std::nullopt;
    }
    oneshot_request req;
    req.context.one_shot = true;
    if (!read_context_fields(doc, req.context, error)) return std::nullopt;
    doc.erase("kernel");
    doc.erase("policy");
    // The rest is an ordinary execution request, checked by the same rules.
    auto execution = parse_execution_request(doc.dump(), accept, limits, error);
    if (!execution) return std::nullopt;
    req.execution = std::move(*execution);
    return req;
}

}  // namespace callisto::gateway::interpreter
