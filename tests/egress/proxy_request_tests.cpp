#include "gateway/egress/proxy_request.hpp"

#include <doctest/doctest.h>

using namespace callisto::gateway::egress;

namespace {

http::request_header<> request(http::verb method, std::string_view target,
                               std::string_view host = "") {
    http::request_header<> h;
    h.method(method);
    h.target(target);
    h.version(11);
    if (!host.empty()) h.set(http::field::host, host);
    return h;
}

std::string refusal(const http::request_header<>& h) {
    auto r = check_request(h);
    if (auto* bad = std::get_if<bad_request>(&r)) return bad->reason;
    return "accepted";
}

proxy_target accepted(const http::request_header<>& h) {
    auto r = check_request(h);
    REQUIRE(std::holds_alternative<proxy_target>(r));
    return std::get<proxy_target>(r);
}

}  // namespace

TEST_CASE("check_request takes a CONNECT to HOST:PORT") {
    auto t = accepted(request(http::verb::connect, "pypi.org:443", "pypi.org:443"));
    CHECK(t.tunnel);
    CHECK(t.host == "pypi.org");
    CHECK(t.port == 443);
    CHECK(accepted(request(http::verb::connect, "[::1]:8080")).host == "[::1]");
    CHECK(accepted(request(http::verb::connect, "127.1:80")).host == "127.1");
}

TEST_CASE("check_request refuses a CONNECT without a port, with a body or another Host") {
    CHECK(refusal(request(http::verb::connect, "pypi.org")) == "CONNECT needs HOST:PORT: no port");
    CHECK(refusal(request(http::verb::connect, "pypi.org:0")).starts_with("CONNECT needs"));
    CHECK(refusal(request(http::verb::connect, "::1:443")).starts_with("CONNECT needs"));
    CHECK(refusal(request(http::verb::connect, "http://pypi.org/")).starts_with("CONNECT needs"));
    CHECK(refusal(request(http::verb::connect, "/")).starts_with("CONNECT needs"));
    auto other_host = request(http::verb::connect, "pypi.org:443", "evil.test:443");
    CHECK(refusal(other_host) == "Host does not match the CONNECT target");
    auto body = request(http::verb::connect, "pypi.org:443");
    body.set(http::field::content_length, "5");
    CHECK(refusal(body) == "a CONNECT with a body");
}

TEST_CASE("check_request takes an absolute http URL whose Host agrees") {
    auto t = accepted(request(http::verb::get, "http://example.org/simple/x/?a=1", "example.org"));
    CHECK_FALSE(t.tunnel);
    CHECK(t.host == "example.org");
    CHECK(t.port == 80);
    CHECK(t.target == "/simple/x/?a=1");
    CHECK(accepted(request(http::verb::get, "http://example.org", "example.org")).target == "/");
    CHECK(accepted(request(http::verb::get, "http://example.org?q", "example.org")).target ==
          "/?q");
    CHECK(accepted(request(http::verb::get, "HTTP://Example.org:80/", "example.ORG")).port == 80);
    CHECK(accepted(request(http::verb::get, "http://example.org/", "example.org:80")).port == 80);
    auto p = accepted(request(http::verb::get, "http://127.0.0.1:8080/x", "127.0.0.1:8080"));
    CHECK(p.port == 8080);
    CHECK(accepted(request(http::verb::get, "http://[::1]:8080/", "[::1]:8080")).host == "[::1]");
}

TEST_CASE("check_request refuses every other request form") {
    CHECK(refusal(request(http::verb::get, "/", "example.org")) ==
          "the request target must be an absolute http:// URL");
    CHECK(refusal(request(http::verb::get, "*", "example.org")).starts_with("the request target"));
    CHECK(refusal(request(http::verb::get, "https://example.org/", "example.org"))
              .starts_with("the request target"));
    CHECK(refusal(request(http::verb::get, "ftp://example.org/", "example.org"))
              .starts_with("the request target"));
    CHECK(refusal(request(http::verb::get, "http://", "")).starts_with("bad URL authority"));
    CHECK(refusal(request(http::verb::get, "http://user@example.org/", "example.org")) ==
          "user information in the URL");
    CHECK(refusal(request(http::verb::get, "http://example.org:0/", "example.org"))
              .starts_with("bad URL authority"));
    CHECK(refusal(request(http::verb::get, "http://example.org/#frag", "example.org")) ==
          "a fragment in the URL");
    CHECK(refusal(request(http::verb::get, "http://example.org/", "")) == "no Host");
    CHECK(refusal(request(http::verb::get, "http://example.org/", "evil.test")) ==
          "Host does not match the URL");
    CHECK(refusal(request(http::verb::get, "http://example.org/", "example.org:8080")) ==
          "Host does not match the URL");
    CHECK(refusal(request(http::verb::get, "http://example.org:8080/", "example.org")) ==
          "Host does not match the URL");
    CHECK(refusal(request(http::verb::get, "http://example.org/", "example.org:")) ==
          "Host does not match the URL");
}

TEST_CASE("check_request refuses ambiguous lengths, as smuggled requests use them") {
    auto both = request(http::verb::post, "http://example.org/", "example.org");
    both.set(http::field::content_length, "5");
    both.set(http::field::transfer_encoding, "chunked");
    CHECK(refusal(both) == "both Content-Length and Transfer-Encoding");

    auto two_lengths = request(http::verb::post, "http://example.org/", "example.org");
    two_lengths.insert(http::field::content_length, "5");
    two_lengths.insert(http::field::content_length, "5");
    CHECK(refusal(two_lengths) == "more than one Content-Length");

    auto two_encodings = request(http::verb::post, "http://example.org/", "example.org");
    two_encodings.insert(http::field::transfer_encoding, "chunked");
    two_encodings.insert(http::field::transfer_encoding, "chunked");
    CHECK(refusal(two_encodings) == "more than one Transfer-Encoding");

    for (const char* te :
         {"gzip, chunked", "chunked, chunked", "identity", "xchunked", "chunked;"}) {
        CAPTURE(te);
        auto odd = request(http::verb::post, "http://example.org/", "example.org");
        odd.set(http::field::transfer_encoding, te);
        CHECK(refusal(odd) == "a Transfer-Encoding other than chunked");
    }
    auto chunked = request(http::verb::post, "http://example.org/", "example.org");
    chunked.set(http::field::transfer_encoding, "Chunked");
    CHECK(refusal(chunked) == "accepted");

    auto two_hosts = request(http::verb::get, "http://example.org/", "example.org");
    two_hosts.insert(http::field::host, "evil.test");
    CHECK(refusal(two_hosts) == "more than one Host");

    auto upgrade = request(http::verb::get, "http://example.org/", "example.org");
    upgrade.set(http::field::upgrade, "websocket");
    CHECK(refusal(upgrade) == "Upgrade through the proxy");

    auto old = request(http::verb::get, "http://example.org/", "example.org");
    old.version(9);
    CHECK(refusal(old) == "only HTTP/1.0 and HTTP/1.1");
}

TEST_CASE("check_request takes Expect: 100-continue, in any case and spacing, on HTTP/1.1") {
    for (const char* value : {"100-continue", "100-Continue", " 100-CONTINUE\t"}) {
        CAPTURE(value);
        auto h = request(http::verb::post, "http://example.org/", "example.org");
        h.set(http::field::content_length, "5");
        h.set(http::field::expect, value);
        CHECK(accepted(h).expect_continue);
    }
    auto none = request(http::verb::post, "http://example.org/", "example.org");
    CHECK_FALSE(accepted(none).expect_continue);
    // HTTP/1.0 knows no 100 (Continue): its expectation is ignored (RFC 9110 10.1.1).
    auto old = request(http::verb::post, "http://example.org/", "example.org");
    old.version(10);
    old.set(http::field::expect, "100-continue");
    CHECK_FALSE(accepted(old).expect_continue);
    // A CONNECT has no body to wait for: nothing to answer but its 200.
    auto tunnel = request(http::verb::connect, "pypi.org:443");
    tunnel.set(http::field::expect, "100-continue");
    CHECK_FALSE(accepted(tunnel).expect_continue);
}

TEST_CASE("check_request answers 417 to any other expectation, or to two") {
    const auto status = [](const http::request_header<>& h) -> unsigned {
        auto r = check_request(h);
        if (auto* bad = std::get_if<bad_request>(&r)) return bad->status;
        return 0;
    };
    for (const char* value : {"", "  ", "200-ok", "100-continue, foo", "100-continue;x=1",
                              "100-continuex", "continue", "100"}) {
        CAPTURE(value);
        auto h = request(http::verb::post, "http://example.org/", "example.org");
        h.set(http::field::content_length, "5");
        h.set(http::field::expect, value);
        CHECK(refusal(h) == "an expectation other than 100-continue");
        CHECK(status(h) == 417);
        h.version(10);
        CHECK(status(h) == 417);
    }
    auto two = request(http::verb::post, "http://example.org/", "example.org");
    two.insert(http::field::expect, "100-continue");
    two.insert(http::field::expect, "100-continue");
    CHECK(refusal(two) == "more than one Expect");
    CHECK(status(two) == 417);
    auto tunnel = request(http::verb::connect, "pypi.org:443");
    tunnel.set(http::field::expect, "something");
    CHECK(status(tunnel) == 417);
    // Every other refusal stays a 400.
    CHECK(status(request(http::verb::get, "/", "example.org")) == 400);
}

TEST_CASE("forward_head sends origin form, drops hop-by-hop fields and asks to close") {
    auto h = request(http::verb::post, "http://example.org/upload?x=1", "example.org");
    h.set(http::field::proxy_connection, "keep-alive");
    h.set(http::field::proxy_authorization, "Basic secret");
    h.set(http::field::connection, "keep-alive, X-Private");
    h.set("X-Private", "drop me");
    h.set(http::field::keep_alive, "timeout=5");
    h.set(http::field::te, "trailers");
    h.set(http::field::expect, "100-continue");
    h.set(http::field::transfer_encoding, "chunked");
    h.set("X-Kept", "yes");
    auto t = accepted(h);
    CHECK(forward_head(h, t, 5) ==
          "POST /upload?x=1 HTTP/1.1\r\n"
          "Host: example.org\r\n"
          "X-Kept: yes\r\n"
          "Content-Length: 5\r\n"
          "Connection: close\r\n\r\n");
    auto get = request(http::verb::get, "http://example.org/", "example.org");
    CHECK(forward_head(get, accepted(get), 0) ==
          "GET / HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n");
    auto empty_post = request(http::verb::post, "http://example.org/", "example.org");
    empty_post.set(http::field::content_length, "0");
    CHECK(forward_head(empty_post, accepted(empty_post), 0) ==
          "POST / HTTP/1.1\r\nHost: example.org\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    // A chunked body longer than the proxy holds goes on chunked, in the proxy's framing: the
    // client's Transfer-Encoding is dropped with the hop-by-hop fields, the proxy's own added.
    CHECK(forward_head(h, t, std::nullopt) ==
          "POST /upload?x=1 HTTP/1.1\r\n"
          "Host: example.org\r\n"
          "X-Kept: yes\r\n"
          "Transfer-Encoding: chunked\r\n"
          "Connection: close\r\n\r\n");
}

TEST_CASE("response_head keeps the body's framing and closes the connection") {
    http::response_header<> r;
    r.result(http::status::ok);
    r.version(11);
    r.set(http::field::transfer_encoding, "chunked");
    r.set(http::field::connection, "keep-alive");
    r.set(http::field::keep_alive, "timeout=5");
    r.set(http::field::content_type, "text/plain");
    CHECK(response_head(r) ==
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n"
          "Connection: close\r\n\r\n");
}

TEST_CASE("plain_answer writes a complete closing answer") {
    CHECK(plain_answer(403, "Forbidden", "no\n") ==
          "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
          "Content-Length: 3\r\nConnection: close\r\n\r\nno\n");
}
