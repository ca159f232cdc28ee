#include "gateway/interpreter/oneshot_request.hpp"

#include <nlohmann/json.hpp>

#include "gateway/interpreter/context_fields.hpp"
#include "gateway/interpreter/json_body.hpp"

namespace callisto::gateway::interpreter {

std::optional<oneshot_request> parse_oneshot_request(std::string_view body, std::string_view accept,
                                                     const execution_request_limits& limits,
                                                     std::string& error) {
    auto doc = parse_json_body(body, error);
    if (!doc) return std::nullopt;
    oneshot_request req;
    req.context.one_shot = true;
    if (!read_context_fields(*doc, req.context, error)) return std::nullopt;
    // The rest is an ordinary execution request, checked by the same rules.
    for (auto it = doc->begin(); it != doc->end();)
        it = is_context_field(it.key()) ? doc->erase(it) : std::next(it);
    auto execution = execution_request_from_json(*doc, accept, limits, error);
    if (!execution) return std::nullopt;
    req.execution = std::move(*execution);
    req.context.language = req.execution.language;
    return req;
}

}  // namespace callisto::gateway::interpreter
