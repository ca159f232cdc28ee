#pragma once
// The MIME types Callisto's ipykernels add to a display of a pandas DataFrame and of a
// matplotlib figure (launcher/kernelspec/ipykernel_bootstrap.py): the frame's columns (as
// [name, [values]] pairs, in the frame's order) and what the figure plots, as JSON, for E2B's
// `data` and `chart` (gateway/e2b/execution_lines.cpp).
// A kernel adds them only for an execute_request whose metadata asks, as E2B's executions do;
// /v1's and MCP's results leave them out should a kernel send them anyway.

#include <string_view>

namespace callisto::gateway::interpreter {

inline constexpr std::string_view dataframe_description_mime =
    "application/vnd.callisto.dataframe+json";
inline constexpr std::string_view chart_description_mime = "application/vnd.callisto.chart+json";

// The execute_request's metadata that asks for them: {"callisto_describe_results": true}.
inline constexpr std::string_view describe_results_metadata =
    R"({"callisto_describe_results":true})";

inline bool is_result_description_mime(std::string_view mime) {
    return mime == dataframe_description_mime || mime == chart_description_mime;
}

}  // namespace callisto::gateway::interpreter
