#pragma once
// HTTP responses with JSON bodies, and the {"reason","message"} error shape of
// jupyter_server / Kernel Gateway.

#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include "gateway/http/beast.hpp"

namespace callisto::gateway {

using http_response = http::response<http::string_body>;

http_response json_response(http::status status, const nlohmann::json& body);

// {"reason": <HTTP reason phrase>, "message": message}
http_response error_response(http::status status, std::string_view message);

http_response empty_response(http::status status);

// The answer to a HEAD request: `res` without its body, its headers (Content-Length among
// them) those GET gets.
void drop_body_for_head(http_response& res);

}  // namespace callisto::gateway
