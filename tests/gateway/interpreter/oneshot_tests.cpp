// One-shot executions and the context fields they share with POST /v1/contexts: parsing every
// form, the routes, and the index that finds them by id and idempotency key.

#include <doctest/doctest.h>

#include "gateway/interpreter/context_request.hpp"
#include "gateway/interpreter/oneshot_executions.hpp"
#include "gateway/interpreter/oneshot_request.hpp"
#include "tests/gateway/route_table_matching.hpp"

using namespace callisto::gateway;
using namespace callisto::gateway::interpreter;

namespace {
const std::string eid = "11111111-2222-4333-8444-555555555555";

std::optional<oneshot_request> parse(std::string_view body, std::string& error,
                                     std::string_view accept = "") {
    return parse_oneshot_request(body, accept, execution_request_limits{}, error);
}

std::shared_ptr<execution> make_execution(std::string id, std::string key = {}) {
    execution_request r;
    r.code = "1";
    r.idempotency_key = std::move(key);
    return std::make_shared<execution>(std::move(id), "ctx", std::move(r), 1000);
}
}  // namespace

TEST_CASE("context request takes a policy, and refuses unknown ones") {
    std::string error;
    auto r = parse_context_request(R"({"kernel": "python3", "policy": "fresh"})", error);
    REQUIRE(r);
    CHECK(r->policy == kernels::kernel_policy::fresh);
    CHECK_FALSE(r->one_shot);
    r = parse_context_request(R"({"policy": null})", error);
    REQUIRE(r);
    CHECK_FALSE(r->policy);
    for (const char* body : {R"({"policy": "always"})", R"({"policy": 1})", R"({"policy": ""})",
                             R"({"policy": ["fresh"]})", R"({"one_shot": true})"}) {
        INFO(body);
        CHECK_FALSE(parse_context_request(body, error));
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("one-shot request: the execution's language also chooses its context's kernel") {
    std::string error;
    auto r = parse(R"({"code": "SELECT 1", "language": "sql"})", error);
    REQUIRE(r);
    CHECK(r->execution.language == languages::execution_language::sql);
    CHECK(r->context.language == languages::execution_language::sql);
    CHECK_FALSE(parse(R"({"code": "1", "language": "fortran"})", error));
    CHECK(error == "'language' must be one of 'python', 'r', 'bash' or 'sql'");
}

TEST_CASE("one-shot request: the execution's fields plus kernel and policy") {
    std::string error;
    auto r = parse(R"j({"code": "print(1)", "policy": "fresh", "kernel": "python3", "timeout": 2,
                        "idempotency_key": "k-1"})j",
                   error);
    REQUIRE(r);
    CHECK(r->context.one_shot);
    CHECK(r->context.policy == kernels::kernel_policy::fresh);
    CHECK(r->context.kernel == "python3");
    CHECK(r->execution.code == "print(1)");
    CHECK(r->execution.timeout == std::chrono::milliseconds(2000));
    CHECK(r->execution.idempotency_key == "k-1");
    auto s = parse(R"({"code": "1"})", error, "application/x-ndjson");
    REQUIRE(s);
    CHECK(s->execution.stream);
    CHECK_FALSE(s->context.policy);
}

TEST_CASE("one-shot request: every bad form is refused with a sentence") {
    for (const char* body :
         {"", "x", "[]", "null", R"({"policy": "fresh"})", R"({"code": 1})",
          R"({"code": "1", "policy": "sometimes"})", R"({"code": "1", "kernel": ""})",
          R"({"code": "1", "kernel": 7})", R"({"code": "1", "timeout": -1})",
          R"({"code": "1", "context": "x"})", R"({"code": "1", "idempotency_key": "has space"})",
          R"({"code": "1\u0000"})"}) {
        INFO(body);
        std::string error;
        CHECK_FALSE(parse(body, error));
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("router maps the one-shot routes and answers wrong methods with 405") {
    CHECK(match_route("POST", "/v1/executions", false).name() == "oneshot_create");
    CHECK(match_route("POST", "/v1/executions/?token=x", false).name() == "oneshot_create");
    auto g = match_route("GET", "/v1/executions/" + eid, false);
    CHECK(g.name() == "oneshot_get");
    CHECK(g.param("execution_id") == eid);
    CHECK(match_route("DELETE", "/v1/executions/" + eid, false).name() == "oneshot_delete");
    CHECK(access_of("oneshot_create") == route_access::token);
    CHECK(match_route("GET", "/v1/executions", false).allow == "POST");
    CHECK(match_route("POST", "/v1/executions/" + eid, false).allow == "GET, DELETE");
    CHECK(match_route("GET", "/v1/executions/" + eid + "/more", false).name() == "not_found");
    CHECK(match_route("GET", "/v1/executions/..", false).name() == "bad_v1_path");
}

TEST_CASE("one-shot index: owners see their own, admins all, others nothing") {
    oneshot_executions index(10, 10);
    auto e = make_execution(eid);
    index.add("ana", e, nullptr);
    CHECK(index.find_for(eid, user{"ana"})->exec == e);
    CHECK(index.find_for(eid, user{"root", true}));
    CHECK_FALSE(index.find_for(eid, user{"bob"}));
    CHECK_FALSE(index.find_for("other", user{"ana"}));
    CHECK(index.find_for(eid, user{"ana"})->context.expired());
}

TEST_CASE("one-shot index: an idempotency key is reserved, then known, per owner") {
    oneshot_executions index(10, 10);
    CHECK(index.claim_key("ana", "k").state == oneshot_executions::key_state::free);
    CHECK(index.claim_key("ana", "k").state == oneshot_executions::key_state::reserved);
    CHECK(index.claim_key("bob", "k").state == oneshot_executions::key_state::free);
    auto e = make_execution("e1", "k");
    index.add("ana", e, nullptr);
    auto known = index.claim_key("ana", "k");
    CHECK(known.state == oneshot_executions::key_state::known);
    CHECK(known.exec == e);
    // A failed start gives the key back.
    index.release_key("bob", "k");
    CHECK(index.claim_key("bob", "k").state == oneshot_executions::key_state::free);
}

TEST_CASE("one-shot index: one user's flood pushes out only their own oldest") {
    oneshot_executions index(100, 2);
    index.add("bob", make_execution("b1", "kb"), nullptr);
    index.add("ana", make_execution("a1"), nullptr);
    index.add("ana", make_execution("a2"), nullptr);
    index.add("ana", make_execution("a3"), nullptr);
    CHECK_FALSE(index.find_for("a1", user{"ana"}));
    CHECK(index.find_for("a2", user{"ana"}));
    CHECK(index.find_for("b1", user{"bob"}));
    CHECK(index.claim_key("bob", "kb").state == oneshot_executions::key_state::known);
}

TEST_CASE("one-shot index is bounded: the oldest are forgotten with their keys") {
    oneshot_executions index(2, 2);
    index.add("ana", make_execution("e1", "k1"), nullptr);
    index.add("ana", make_execution("e2"), nullptr);
    index.add("ana", make_execution("e3"), nullptr);
    CHECK_FALSE(index.find_for("e1", user{"ana"}));
    CHECK(index.find_for("e2", user{"ana"}));
    CHECK(index.claim_key("ana", "k1").state == oneshot_executions::key_state::free);
}
