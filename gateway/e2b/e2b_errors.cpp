#include "gateway/e2b/e2b_errors.hpp"

#include "gateway/http/json_response.hpp"

namespace callisto::gateway::e2b {

http_response e2b_error(http::status status, std::string_view message) {
    return json_response(status,
                         {{"code", static_cast<int>(status)}, {"message", std::string(message)}});
}

std::string_view to_string(connect_code code) {
    switch (code) {
        case connect_code::invalid_argument: return "invalid_argument";
        case connect_code::not_found: return "not_found";
        case connect_code::already_exists: return "already_exists";
        case connect_code::permission_denied: return "permission_denied";
        case connect_code::unauthenticated: return "unauthenticated";
        case connect_code::resource_exhausted: return "resource_exhausted";
        case connect_code::failed_precondition: return "failed_precondition";
        case connect_code::unimplemented: return "unimplemented";
        case connect_code::internal: return "internal";
        case connect_code::unavailable: return "unavailable";
        case connect_code::deadline_exceeded: return "deadline_exceeded";
    }
    return "unknown";
}

http::status http_status_of(connect_code code) {
    switch (code) {
        case connect_code::invalid_argument:
        case connect_code::failed_precondition: return http::status::bad_request;
        case connect_code::not_found: return http::status::not_found;
        case connect_code::already_exists: return http::status::conflict;
        case connect_code::permission_denied: return http::status::forbidden;
        case connect_code::unauthenticated: return http::status::unauthorized;
        case connect_code::resource_exhausted: return http::status::too_many_requests;
        case connect_code::unimplemented: return http::status::not_implemented;
        case connect_code::unavailable: return http::status::service_unavailable;
        case connect_code::deadline_exceeded: return http::status::gateway_timeout;
        case connect_code::internal: break;
    }
    return http::status::internal_server_error;
}

http_response connect_error(connect_code code, std::string_view message) {
    return json_response(http_status_of(code), {{"code", std::string(to_string(code))},
                                                {"message", std::string(message)}});
}

}  // namespace callisto::gateway::e2b
