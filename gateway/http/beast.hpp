#pragma once
// The short names every HTTP and WebSocket file uses for Beast's namespaces: `http::status`,
// `websocket::close_code`, `beast::error_code`. Declaring the namespaces is enough for the
// aliases; each file includes the Beast headers it uses.

namespace boost::beast::http {}
namespace boost::beast::websocket {}

namespace callisto::gateway {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;

}  // namespace callisto::gateway
