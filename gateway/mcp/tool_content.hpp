#pragma once
// How tool outcomes become MCP tool results ({"content": [...], "isError"}): an execution as
// one text block (stdout, stderr, results, the traceback) plus an image block per PNG/JPEG
// chart; a file as text, an image, or a base64 resource. Pure.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace callisto::gateway::mcp {

// `execution` is the interpreter API's execution JSON. isError unless its status is "ok", so
// the model sees a failed run as a failure it can correct.
nlohmann::json execution_tool_result(const nlohmann::json& execution);

nlohmann::json text_tool_result(std::string text, bool is_error = false);

// {"files": [...], "truncated"} as workdir_files lists them.
nlohmann::json file_list_tool_result(const nlohmann::json& files, bool truncated);

// Text when the bytes are UTF-8 without NUL, an image block for PNG/JPEG/GIF/WebP names,
// else an embedded resource with a base64 blob.
nlohmann::json file_tool_result(std::string_view path, const std::string& bytes);

bool is_utf8_text(std::string_view bytes);

// A snapshot, fork, pause or resume as the interpreter answered it (the /v1 route's status and
// JSON body, null when it had none): an error's message with isError (the model reads why: a
// busy context, a quota, an unknown id), else a sentence on what was done and the answer.
nlohmann::json operation_tool_result(std::string_view tool, int status, const nlohmann::json& body);

}  // namespace callisto::gateway::mcp
