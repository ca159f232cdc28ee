#pragma once
// An interpreter execution's events (gateway/interpreter/execution.hpp) as the lines of E2B's
// /execute NDJSON stream: stdout, stderr, result (Jupyter's MIME bundle under E2B's names),
// error (the traceback one string), number_of_executions and end_of_execution. Pure: every
// event's mapping is unit-tested. Lines never hold a newline of their own: the SDK parses
// every line as JSON, so the stream has no blank lines either.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace callisto::gateway::e2b {

// The lines (without '\n') one event becomes; none for events E2B has no line for ("queued",
// "start").
std::vector<std::string> execution_lines(const nlohmann::json& event);

// {"type":"keepalive"}: written while code runs quietly, so proxies keep the stream open.
std::string keepalive_line();

// A Jupyter MIME bundle as an E2B result's members ("text/plain" → "text", "image/png" →
// "png", …; the kernel's descriptions of a DataFrame and of a figure → "data" and "chart",
// interpreter/result_descriptions.hpp); MIME types E2B has no name for are kept under their
// own name (the SDK puts them in `extra`). Ordered: `data` has the frame's columns in its
// order.
nlohmann::ordered_json e2b_result(const nlohmann::json& bundle, bool main_result);

}  // namespace callisto::gateway::e2b
