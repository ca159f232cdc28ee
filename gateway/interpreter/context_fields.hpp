#pragma once
// The fields that choose a context's kernel ("kernel", "policy"), shared by POST /v1/contexts
// and the one-shot POST /v1/executions, which takes them next to the execution's own.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gateway/interpreter/context_request.hpp"

namespace callisto::gateway::interpreter {

bool is_context_field(std::string_view name);

// Reads the context fields of `doc` (a JSON object) into `out`; false with a sentence in
// `error` when one is malformed. Other fields are left alone.
bool read_context_fields(const nlohmann::json& doc, context_request& out, std::string& error);

}  // namespace callisto::gateway::interpreter
