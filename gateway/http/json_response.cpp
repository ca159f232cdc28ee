#include "gateway/http/json_response.hpp"

#include <boost/beast/http/field.hpp>

namespace callisto::gateway {

http_response json_response(http::status status, const nlohmann::json& body) {
    http_response res{status, 11};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-store");
    res.body() = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    res.prepare_payload();
    return res;
}

http_response error_response(http::status status, std::string_view message) {
    return json_response(status, {{"reason", std::string(http::obsolete_reason(status))},
                                  {"message", std::string(message)}});
}

http_response empty_response(http::status status) {
    http_response res{status, 11};
    res.set(http::field::cache_control, "no-store");
    res.prepare_payload();
    return res;
}

void drop_body_for_head(http_response& res) {
    // Beast writes the body it is given and the Content-Length the header says, without
    // comparing them.
    if (!res.has_content_length()) res.content_length(res.body().size());
    res.body().clear();
}

}  // namespace callisto::gateway
