#pragma once
// The first step of every /v1 request body: one JSON object, or a clear refusal.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace callisto::gateway::interpreter {

std::optional<nlohmann::json> parse_json_body(std::string_view body, std::string& error);

}  // namespace callisto::gateway::interpreter
