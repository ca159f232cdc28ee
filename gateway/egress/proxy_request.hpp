#pragma once
// What the egress proxy accepts from a kernel, checked before anything is resolved or
// connected: a CONNECT to HOST:PORT, or one absolute-form plain-HTTP request whose Host agrees
// with its URL and whose length is unambiguous (no request smuggling), with at most the one
// expectation HTTP knows (`Expect: 100-continue`). And what it sends on:
// the request in origin form, hop-by-hop fields dropped, one request per connection.
// No socket: tests/egress/proxy_request_tests.cpp.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>

namespace callisto::gateway::egress {

namespace http = boost::beast::http;

// Where a request goes. For CONNECT, target is empty.
struct proxy_target {
    bool tunnel = false;  // CONNECT
    std::string host;     // as the client wrote it (any spelling: the allowlist decides)
    std::uint16_t port = 0;
    std::string target;  // origin form: "/path?query"
    // `Expect: 100-continue` on an HTTP/1.1 request: the client waits for a 100 before it
    // sends its body, which the proxy answers itself once the request is allowed and its
    // destination connected (a refusal is the final answer, its body never read).
    bool expect_continue = false;
};

// Why a request is refused before any policy: a 400, or a 417 for an expectation the proxy
// cannot meet, with this text.
struct bad_request {
    std::string reason;
    unsigned status = 400;
};

std::variant<proxy_target, bad_request> check_request(const http::request_header<>& header);

// The head sent to the destination for a plain-HTTP request whose body is `body_length`
// bytes (nullopt: of a length not known yet, sent on chunked in the proxy's own framing):
// origin-form target, the client's fields without the hop-by-hop ones (RFC 9110 7.6.1, and
// those Connection names), a Content-Length when the request had a body or a length (or
// Transfer-Encoding: chunked), and `Connection: close`.
std::string forward_head(const http::request_header<>& header, const proxy_target& target,
                         std::optional<std::uint64_t> body_length);

// The destination's response head as the client gets it: hop-by-hop fields dropped but
// Transfer-Encoding kept (the body is relayed as it comes), and `Connection: close`, so the
// client sends no second request on a connection the proxy no longer reads.
std::string response_head(const http::response_header<>& header);

// The proxy's own answers: a status line, text/plain, Connection: close, the body.
std::string plain_answer(unsigned status, std::string_view reason_phrase, std::string_view body);

}  // namespace callisto::gateway::egress
