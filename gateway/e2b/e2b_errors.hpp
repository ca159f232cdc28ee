#pragma once
// The error shapes the E2B SDKs read: the control plane's {"code", "message"} (a 404 with that
// body makes kill() answer false instead of throwing), and Connect's {"code": "not_found",
// "message"} with the HTTP status Connect maps each code to (envd's files and processes).

#include <string>
#include <string_view>

#include "gateway/http/beast.hpp"
#include "gateway/http/http_message.hpp"

namespace callisto::gateway::e2b {

// {"code": <status as a number>, "message": ...}
http_response e2b_error(http::status status, std::string_view message);

// Connect's error codes (connectrpc.com/docs/protocol, "Error Codes"), the ones envd answers.
enum class connect_code {
    invalid_argument,
    not_found,
    already_exists,
    permission_denied,
    unauthenticated,
    resource_exhausted,
    failed_precondition,
    unimplemented,
    internal,
    unavailable,
    deadline_exceeded,
};
std::string_view to_string(connect_code code);
// The HTTP status a unary call answers with that code.
http::status http_status_of(connect_code code);

// A unary call's error: the status above and {"code", "message"} as application/json.
http_response connect_error(connect_code code, std::string_view message);

}  // namespace callisto::gateway::e2b
