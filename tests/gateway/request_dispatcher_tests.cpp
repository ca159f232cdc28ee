#include "gateway/http/request_dispatcher.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "gateway/http/beast.hpp"
#include "gateway/http/json_response.hpp"

using namespace callisto::gateway;

namespace {

const user_directory auth(token_auth("dispatcher-test-token"));
constexpr std::string_view good = "token dispatcher-test-token";

// The answer a dispatched request gets, and which handler ran.
struct outcome {
    std::optional<http_response> answer;
    std::optional<route_kind> handled;
    std::optional<user> who;
};

outcome dispatch(const request_dispatcher& d, std::string_view method, std::string_view target,
                 std::string_view authorization = good) {
    auto verdict = d.on_header(method, target, authorization);
    outcome out;
    if (verdict.refusal) {
        out.answer = std::move(verdict.refusal);
        return out;
    }
    incoming_request in{verdict.where,
                        http_request{},
                        verdict.who,
                        [&out](http_response res) { out.answer = std::move(res); },
                        []() -> taken_connection { throw std::logic_error("not taken here"); },
                        [](file_response) { throw std::logic_error("no file answers here"); }};
    d.dispatch(std::move(in));
    return out;
}

request_dispatcher with_handlers(outcome& seen) {
    request_dispatcher d(auth, false, 1000, "which is fixed");
    auto record = [&seen](incoming_request in) {
        seen.handled = in.where.kind;
        seen.who = in.who;
        in.respond(json_response(http::status::ok, {{"ok", true}}));
    };
    d.handle(route_kind::kernels_list, record);
    d.handle(route_kind::healthz, record);
    d.handle(route_kind::file_put, record, {50'000, "set by --upload-limit"});
    d.handle(route_kind::mcp, record, {20'000, {}, [] {
                                           auto res = error_response(http::status::unauthorized,
                                                                     "token needed");
                                           res.set(http::field::www_authenticate, "Bearer");
                                           return res;
                                       }});
    return d;
}

}  // namespace

TEST_CASE("the dispatcher hands a request to its route's handler, with the sender") {
    outcome seen;
    auto d = with_handlers(seen);
    auto out = dispatch(d, "GET", "/api/kernels");
    REQUIRE(out.answer);
    CHECK(out.answer->result() == http::status::ok);
    CHECK(seen.handled == route_kind::kernels_list);
    REQUIRE(seen.who);
    CHECK(seen.who->name == "admin");
}

TEST_CASE(
    "the dispatcher refuses a missing or wrong token on the header: 401, or the route's own") {
    outcome seen;
    auto d = with_handlers(seen);
    for (std::string_view authorization : {std::string_view(""), std::string_view("token nope")}) {
        auto v = d.on_header("GET", "/api/kernels", authorization);
        REQUIRE(v.refusal);
        CHECK(v.refusal->result() == http::status::unauthorized);
        CHECK((*v.refusal)[http::field::www_authenticate] == "Bearer realm=\"callisto\"");
        CHECK(v.refusal->body().find("a valid token is required") != std::string::npos);
    }
    // ?token= works as the header does.
    CHECK_FALSE(d.on_header("GET", "/api/kernels?token=dispatcher-test-token", "").refusal);
    auto mcp = d.on_header("POST", "/mcp", "Bearer wrong");
    REQUIRE(mcp.refusal);
    CHECK(mcp.refusal->result() == http::status::unauthorized);
    CHECK((*mcp.refusal)[http::field::www_authenticate] == "Bearer");
    CHECK_FALSE(seen.handled);
}

TEST_CASE("a token in Sec-WebSocket-Protocol counts on a WebSocket upgrade only") {
    // A browser's WebSocket can pass its token nowhere else; a plain request has the
    // Authorization header, and proxies log Sec-WebSocket-Protocol.
    outcome seen;
    auto d = with_handlers(seen);
    // "dispatcher-test-token" in hex, as the web UI offers it.
    const std::string offer =
        "callisto.auth, callisto.token.646973706174636865722d746573742d746f6b656e";
    auto upgrade = d.on_header("GET", "/api/kernels/k/channels", "", offer, true);
    CHECK_FALSE(upgrade.refusal);
    REQUIRE(upgrade.who);
    CHECK(upgrade.who->name == "admin");
    for (auto [method, target] :
         {std::pair{"GET", "/api/kernels"}, std::pair{"POST", "/v1/executions"},
          std::pair{"GET", "/api/kernels/k/channels"}}) {
        INFO(method << " " << target);
        auto plain = d.on_header(method, target, "", offer, false);
        REQUIRE(plain.refusal);
        CHECK(plain.refusal->result() == http::status::unauthorized);
        CHECK_FALSE(plain.who);
        CHECK_FALSE(d.on_header(method, target, "", offer).who);  // not an upgrade by default
    }
    // The other places still count on either kind of request.
    CHECK(d.on_header("GET", "/api/kernels", good, "callisto.auth", false).who);
    CHECK(d.on_header("GET", "/api/kernels/k/channels", "", "callisto.token.00", true).refusal);
    CHECK_FALSE(seen.handled);
}

TEST_CASE("the probes and unknown paths need no token; unknown paths answer 404 after the body") {
    outcome seen;
    auto d = with_handlers(seen);
    CHECK_FALSE(d.on_header("GET", "/healthz", "").refusal);
    CHECK_FALSE(d.on_header("GET", "/readyz", "").refusal);
    auto unknown = dispatch(d, "GET", "/no/such/thing", "");
    REQUIRE(unknown.answer);
    CHECK(unknown.answer->result() == http::status::not_found);
    // A route nobody registered a handler for is as unknown.
    auto unregistered = dispatch(d, "GET", "/api/kernelspecs");
    REQUIRE(unregistered.answer);
    CHECK(unregistered.answer->result() == http::status::not_found);
    CHECK_FALSE(seen.handled);
}

TEST_CASE("the dispatcher answers a wrong method 405 with Allow, an unsafe /v1 path 400") {
    outcome seen;
    auto d = with_handlers(seen);
    auto wrong = dispatch(d, "PATCH", "/api/kernels");
    REQUIRE(wrong.answer);
    CHECK(wrong.answer->result() == http::status::method_not_allowed);
    CHECK_FALSE((*wrong.answer)[http::field::allow].empty());
    auto unsafe = dispatch(d, "GET", "/v1/contexts/abc/files/../../etc/passwd");
    REQUIRE(unsafe.answer);
    CHECK(unsafe.answer->result() == http::status::bad_request);
    CHECK_FALSE(seen.handled);
}

TEST_CASE("the dispatcher gives each route its body limit and what sets it") {
    outcome seen;
    auto d = with_handlers(seen);
    auto rest = d.on_header("GET", "/api/kernels", good);
    CHECK(rest.body_limit == 1000);
    CHECK(rest.body_limit_note == "which is fixed");
    auto upload =
        d.on_header("PUT", "/v1/contexts/0123456789abcdef0123456789abcdef/files/a.csv", good);
    CHECK(upload.body_limit == 50'000);
    CHECK(upload.body_limit_note == "set by --upload-limit");
    // A route with a limit of its own and no note gets the default note.
    auto mcp = d.on_header("POST", "/mcp", good);
    CHECK(mcp.body_limit == 20'000);
    CHECK(mcp.body_limit_note == "which is fixed");
}

TEST_CASE("a body over its limit is answered 413 with the limit, its units and what sets it") {
    auto res = body_too_large(2'097'152, 1u << 20, "set by --upload-limit");
    CHECK(res.result() == http::status::payload_too_large);
    CHECK_FALSE(res.keep_alive());
    auto message = nlohmann::json::parse(res.body())["message"].get<std::string>();
    CHECK(message ==
          "request body of 2097152 bytes is larger than this route's limit of 1048576 bytes "
          "(1MiB), set by --upload-limit");
    // A chunked body has no declared size.
    message = nlohmann::json::parse(body_too_large(std::nullopt, 1000, "").body())["message"]
                  .get<std::string>();
    CHECK(message == "request body is larger than this route's limit of 1000 bytes");
}

TEST_CASE("a HEAD answer is GET's headers, Content-Length among them, without the body") {
    auto res = json_response(http::status::ok, {{"status", "ok"}});
    const auto length = res.body().size();
    drop_body_for_head(res);
    CHECK(res.body().empty());
    CHECK(res[http::field::content_length] == std::to_string(length));
    CHECK(res[http::field::content_type] == "application/json");
    // An error keeps its status and headers too.
    auto missing = error_response(http::status::not_found, "not found");
    drop_body_for_head(missing);
    CHECK(missing.result() == http::status::not_found);
    CHECK(missing.body().empty());
    CHECK(missing[http::field::content_length] != "0");
}
