#include "gateway/http/request_dispatcher.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

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
    std::optional<std::string_view> handled;  // the route's name
    std::optional<user> who;
    bool saturated = false;  // what kernel_create's admission says
    int admissions = 0;

    // The status of the answer, which there must be.
    http::status status() const {
        REQUIRE(answer);
        return answer->result();
    }
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
    request_dispatcher d(auth, 1000, "which is fixed");
    auto record = [&seen](incoming_request in) {
        seen.handled = in.where.name();
        seen.who = in.who;
        in.respond(json_response(http::status::ok, {{"ok", true}}));
    };
    d.add({"kernels_list", "GET", "/api/kernels"}, record);
    d.add({"kernel_channels", "GET", "/api/kernels/{kernel_id}/channels", route_access::token,
           route_type::websocket},
          record);
    d.add({"healthz", "GET", "/healthz", route_access::open}, record);
    d.add({"e2b_execute", "POST", "/execute", route_access::own_token}, record);
    d.add({"file_put", "PUT", "/v1/contexts/{context_id}/files/{path...}"}, record,
          {50'000, "set by --upload-limit"});
    d.add({"mcp", "POST, DELETE", "/mcp"}, record,
          {20'000, {}, [] {
               auto res = error_response(http::status::unauthorized, "token needed");
               res.set(http::field::www_authenticate, "Bearer");
               return res;
           }});
    d.add({"oneshot_create", "POST", "/v1/executions"}, record);
    d.add({"overview", "GET", "/v1/admin/overview", route_access::admin}, record);
    d.add({"kernel_create", "POST", "/api/kernels"}, record, {.admit = [&seen] {
              ++seen.admissions;
              return seen.saturated ? std::optional(error_response(
                                          http::status::service_unavailable, "too busy"))
                                    : std::nullopt;
          }});
    return d;
}

}  // namespace

TEST_CASE("the dispatcher hands a request to its route's handler, with the sender") {
    outcome seen;
    auto d = with_handlers(seen);
    auto out = dispatch(d, "GET", "/api/kernels");
    CHECK(out.status() == http::status::ok);
    CHECK(seen.handled == "kernels_list");
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
    CHECK(dispatch(d, "GET", "/no/such/thing", "").status() == http::status::not_found);
    // A route nobody added is as unknown.
    CHECK(dispatch(d, "GET", "/api/kernelspecs").status() == http::status::not_found);
    CHECK_FALSE(seen.handled);
}

TEST_CASE("a route with a token of its own reaches its handler without the user's") {
    outcome seen;
    const auto d = with_handlers(seen);
    // The handler checks the route's own credential (E2B's sandbox token) and answers for it.
    for (std::string_view authorization : {std::string_view(), std::string_view("token wrong")}) {
        seen = {};
        auto out = dispatch(d, "POST", "/execute", authorization);
        REQUIRE(out.answer);
        CHECK(out.answer->result() == http::status::ok);
        CHECK(seen.handled == "e2b_execute");
        CHECK_FALSE(seen.who);
    }
    // A user's token, when one comes too, is still known to it.
    seen = {};
    dispatch(d, "POST", "/execute");
    CHECK(seen.handled == "e2b_execute");
    REQUIRE(seen.who);
    CHECK(seen.who->name == "admin");
}

TEST_CASE("the dispatcher answers a wrong method 405 with Allow, an unsafe /v1 path 400") {
    outcome seen;
    auto d = with_handlers(seen);
    auto wrong = dispatch(d, "PATCH", "/api/kernels");
    REQUIRE(wrong.answer);
    CHECK(wrong.answer->result() == http::status::method_not_allowed);
    CHECK_FALSE((*wrong.answer)[http::field::allow].empty());
    CHECK(dispatch(d, "GET", "/v1/contexts/abc/files/../../etc/passwd").status() ==
          http::status::bad_request);
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

namespace {

// ana, a user, and root, an admin.
struct two_users {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("callisto-dispatcher-users-" + std::to_string(::getpid()));
    std::optional<user_directory> users;
    two_users() {
        std::ofstream(path) << R"([{"name": "ana", "token_sha256": ")" +
                                   token_auth::token_sha256("ana-token-1") + R"("},
                                  {"name": "root", "token_sha256": ")" +
                                   token_auth::token_sha256("root-token-1") +
                                   R"(", "role": "admin"}])";
        users.emplace(path);
    }
    ~two_users() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("an admin route refuses a user's token 403 on the header, an admin's goes through") {
    two_users people;
    outcome seen;
    request_dispatcher d(*people.users, 1000, "which is fixed");
    d.add({"overview", "GET", "/v1/admin/overview", route_access::admin},
          [&seen](incoming_request in) {
              seen.handled = in.where.name();
              in.respond(json_response(http::status::ok, {{"ok", true}}));
          });
    d.add({"kernels_list", "GET", "/api/kernels"}, [](incoming_request) {});
    for (std::string_view method : {"GET", "HEAD"}) {
        auto ana = d.on_header(method, "/v1/admin/overview", "token ana-token-1");
        REQUIRE(ana.refusal);
        CHECK(ana.refusal->result() == http::status::forbidden);
        auto message = nlohmann::json::parse(ana.refusal->body())["message"].get<std::string>();
        CHECK(message == "GET /v1/admin/overview needs an admin's token");
        REQUIRE(ana.who);  // the access log names who was refused
        CHECK(ana.who->name == "ana");
    }
    // No token at all is 401, as everywhere.
    auto nobody = d.on_header("GET", "/v1/admin/overview", "");
    REQUIRE(nobody.refusal);
    CHECK(nobody.refusal->result() == http::status::unauthorized);
    // A user's token is enough for a user's route.
    CHECK_FALSE(d.on_header("GET", "/api/kernels", "token ana-token-1").refusal);
    CHECK(dispatch(d, "GET", "/v1/admin/overview", "token root-token-1").status() ==
          http::status::ok);
    CHECK(seen.handled == "overview");
}

TEST_CASE("a route's admission is asked once the sender is known, and may refuse on the header") {
    outcome seen;
    auto d = with_handlers(seen);
    // Without a token: 401, and admission is not asked.
    auto without = d.on_header("POST", "/api/kernels", "");
    REQUIRE(without.refusal);
    CHECK(without.refusal->result() == http::status::unauthorized);
    CHECK(seen.admissions == 0);
    CHECK_FALSE(d.on_header("POST", "/api/kernels", good).refusal);
    CHECK(seen.admissions == 1);
    seen.saturated = true;
    auto refused = d.on_header("POST", "/api/kernels", good);
    REQUIRE(refused.refusal);
    CHECK(refused.refusal->result() == http::status::service_unavailable);
    CHECK(seen.admissions == 2);
    // Other routes are not asked.
    CHECK_FALSE(d.on_header("GET", "/api/kernels", good).refusal);
    CHECK(seen.admissions == 2);
    CHECK_FALSE(seen.handled);
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
