#pragma once
// What a client of the HTTP APIs (the Kernel Gateway REST API, /v1, MCP's transport) is told
// when the kernels layer refuses or fails a kernel.

#include <string>

#include "gateway/http/http_message.hpp"
#include "gateway/kernels/session/kernel_error.hpp"

namespace callisto::gateway::jupyter_api {

// 404, 409, 429 (with Retry-After: come back later, rather than an unexplained refusal),
// 503, 500; `message` says what happened.
http_response kernel_error_answer(kernels::kernel_error error, const std::string& message);

}  // namespace callisto::gateway::jupyter_api
