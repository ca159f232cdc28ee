// The pure parts of the interpreter API: output caps, ANSI stripping, request validation,
// base64 and file names for oversized results, and the /v1 routes.

#include <doctest/doctest.h>

#include "gateway/interpreter/ansi_text.hpp"
#include "gateway/interpreter/api/events_message.hpp"
#include "gateway/interpreter/context_request.hpp"
#include "gateway/interpreter/execution.hpp"
#include "gateway/interpreter/execution_env.hpp"
#include "gateway/interpreter/execution_request.hpp"
#include "gateway/interpreter/output_budget.hpp"
#include "gateway/interpreter/oversized_result.hpp"
#include "tests/gateway/route_table_matching.hpp"
#include "tests/support/refusals.hpp"

using namespace callisto::gateway;
using namespace callisto::gateway::interpreter;
using callisto::test::check_each_refused;

namespace {
const std::string cid = "0f1e2d3c-4b5a-4968-8776-655443322110";
const std::string eid = "11111111-2222-4333-8444-555555555555";

std::optional<execution_request> parse(std::string_view body, std::string& error,
                                       std::string_view accept = "") {
    return parse_execution_request(body, accept, execution_request_limits{}, error);
}
}  // namespace

// ---- output budget ---------------------------------------------------------------------------

TEST_CASE("output budget keeps everything that fits") {
    output_budget b(100);
    CHECK(b.append("hello ") == "hello ");
    b.append("world");
    CHECK(b.str() == "hello world");
    CHECK(b.truncated_bytes() == 0);
    CHECK(b.total_bytes() == 11);
}

TEST_CASE("output budget keeps head and tail with a marker saying how much was cut") {
    output_budget b(10);
    std::string all;
    for (int i = 0; i < 100; ++i) {
        std::string piece = std::to_string(i % 10);
        all += piece;
        b.append(piece);
    }
    CHECK(b.total_bytes() == 100);
    CHECK(b.truncated_bytes() == 90);
    CHECK(b.str() == all.substr(0, 5) + "\n[... 90 bytes truncated ...]\n" + all.substr(95));
}

TEST_CASE("output budget handles one piece larger than the whole budget") {
    output_budget b(8);
    std::string big(1000, 'x');
    big.replace(0, 4, "HEAD");
    big.replace(996, 4, "TAIL");
    auto shown = b.append(big);
    CHECK(shown == "HEAD");
    CHECK(b.head_full());
    CHECK(b.str() == "HEAD" + output_budget::marker(992) + "TAIL");
    CHECK(b.append("more").empty());  // the live stream shows the head only
    CHECK(b.str() == "HEAD" + output_budget::marker(996) + "more");
}

TEST_CASE("output budget of zero keeps nothing but says how much there was") {
    output_budget b(0);
    b.append("abc");
    CHECK(b.str() == output_budget::marker(3));
}

// ---- ANSI ------------------------------------------------------------------------------------

TEST_CASE("strip_ansi removes IPython's colour codes from a traceback") {
    CHECK(strip_ansi("\x1b[0;31mZeroDivisionError\x1b[0m: division by zero") ==
          "ZeroDivisionError: division by zero");
    CHECK(strip_ansi("\x1b[1;32m----> 1\x1b[39m 1/0") == "----> 1 1/0");
}

TEST_CASE("strip_ansi removes OSC sequences and lone escapes, keeps plain text and UTF-8") {
    CHECK(strip_ansi("a\x1b]8;;http://x\x07link\x1b]8;;\x1b\\b") == "alinkb");
    CHECK(strip_ansi("x\x1b(By") == "xy");
    CHECK(strip_ansi("trailing\x1b") == "trailing");
    CHECK(strip_ansi("cut\x1b[31") == "cut");
    CHECK(strip_ansi("plain ü ✓") == "plain ü ✓");
}

// ---- requests --------------------------------------------------------------------------------

TEST_CASE("execution request: the good forms") {
    std::string error;
    auto r = parse(R"j({"code": "print(1)"})j", error);
    REQUIRE(r);
    CHECK(r->code == "print(1)");
    CHECK(r->timeout == std::chrono::seconds(600));  // the server's default deadline
    CHECK_FALSE(r->stream);
    r = parse(R"({"code": "", "timeout": 0.5, "idempotency_key": "k-1", "stream": true})", error);
    REQUIRE(r);
    CHECK(r->timeout == std::chrono::milliseconds(500));
    CHECK(r->idempotency_key == "k-1");
    CHECK(r->stream);
    r = parse(R"({"code": "1", "timeout": null, "idempotency_key": null})", error);
    REQUIRE(r);
    CHECK(r->timeout == std::chrono::seconds(600));
}

TEST_CASE("execution request: an output budget within the server's, and its bad forms") {
    std::string error;
    execution_request_limits limits;
    limits.max_output_budget = 4096;
    auto r = parse_execution_request(R"({"code": "1", "output_budget": 1000})", "", limits, error);
    REQUIRE(r);
    CHECK(r->output_budget == 1000u);
    r = parse_execution_request(R"({"code": "1", "output_budget": null})", "", limits, error);
    REQUIRE(r);
    CHECK_FALSE(r->output_budget);
    for (const char* bad :
         {R"({"code": "1", "output_budget": 4097})", R"({"code": "1", "output_budget": 255})",
          R"({"code": "1", "output_budget": -5})", R"({"code": "1", "output_budget": 1000.5})",
          R"({"code": "1", "output_budget": "1KiB"})"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_execution_request(bad, "", limits, error));
        CHECK(error ==
              "'output_budget' must be a whole number of bytes from 256 to 4096 (the server's "
              "--output-budget)");
    }
}

TEST_CASE("execution request: a request without a timeout gets the server's, within its maximum") {
    std::string error;
    execution_request_limits limits;
    limits.default_timeout = std::chrono::seconds(30);
    limits.max_timeout = std::chrono::seconds(60);
    auto r = parse_execution_request(R"({"code": "1"})", "", limits, error);
    REQUIRE(r);
    CHECK(r->timeout == std::chrono::seconds(30));
    r = parse_execution_request(R"({"code": "1", "timeout": 45})", "", limits, error);
    REQUIRE(r);
    CHECK(r->timeout == std::chrono::seconds(45));
    CHECK_FALSE(parse_execution_request(R"({"code": "1", "timeout": 61})", "", limits, error));
    CHECK(error == "'timeout' must be more than 0 and at most 60 seconds");
    limits.default_timeout = std::chrono::seconds(0);  // --execution-timeout=0: none
    r = parse_execution_request(R"({"code": "1"})", "", limits, error);
    REQUIRE(r);
    CHECK_FALSE(r->timeout);
}

TEST_CASE("execution request: Accept application/x-ndjson asks for the stream") {
    std::string error;
    auto r = parse(R"({"code": "1"})", error, "application/x-ndjson");
    REQUIRE(r);
    CHECK(r->stream);
}

TEST_CASE("execution request: every bad form is refused with a sentence") {
    const char* bad[] = {
        "",
        "not json",
        "[1]",
        "\"code\"",
        "{}",
        R"({"code": 1})",
        R"({"code": null})",
        R"({"code": "1", "timeout": "10"})",
        R"({"code": "1", "timeout": 0})",
        R"({"code": "1", "timeout": -1})",
        R"({"code": "1", "timeout": true})",
        R"({"code": "1", "timeout": 1e12})",
        R"({"code": "1", "idempotency_key": ""})",
        R"({"code": "1", "idempotency_key": 5})",
        R"({"code": "1", "idempotency_key": "has space"})",
        R"({"code": "1", "idempotency_key": "é"})",
        R"({"code": "1", "stream": "yes"})",
        R"({"code": "1", "unknown": 1})",
    };
    for (const char* body : bad) {
        INFO(body);
        std::string error;
        CHECK_FALSE(parse(body, error));
        CHECK_FALSE(error.empty());
    }
    std::string error;
    CHECK_FALSE(
        parse(R"({"code": "1", "idempotency_key": ")" + std::string(129, 'k') + "\"}", error));
    execution_request_limits small;
    small.max_code_bytes = 4;
    CHECK_FALSE(parse_execution_request(R"({"code": "12345"})", "", small, error));
    CHECK(error.find("larger") != std::string::npos);
}

TEST_CASE("execution request: code holding a NUL is refused, naming the field") {
    // ipykernel drops such a request without a reply: the context would wait for ever.
    for (const char* body : {R"({"code": "print(1)\u0000"})", R"({"code": "\u0000"})",
                             R"({"code": "x = '\u0000'", "language": "bash"})"}) {
        INFO(body);
        std::string error;
        CHECK_FALSE(parse(body, error));
        CHECK(error == "'code' contains a NUL character, which a kernel cannot run");
    }
    std::string error;
    auto escaped = parse(R"j({"code": "print('\\u0000')"})j", error);  // a backslash, not a NUL
    REQUIRE(escaped);
    CHECK(escaped->code == "print('\\u0000')");
}

TEST_CASE("execution request: env is parsed, sorted by name, and keep_ansi is a boolean") {
    std::string error;
    auto r = parse(
        R"({"code": "1", "env": {"B_VAR": "two", "A": "", "x_1": "ü ✓ \n\"q\""}, "keep_ansi": true})",
        error);
    REQUIRE(r);
    CHECK(r->keep_ansi);
    CHECK(r->env == env_vars{{"A", ""}, {"B_VAR", "two"}, {"x_1", "ü ✓ \n\"q\""}});
    r = parse(R"({"code": "1", "env": {}, "keep_ansi": null})", error);
    REQUIRE(r);
    CHECK(r->env.empty());
    CHECK_FALSE(r->keep_ansi);
    r = parse(R"({"code": "1", "env": null})", error);
    REQUIRE(r);
    CHECK(r->env.empty());
}

TEST_CASE("execution request: every bad form of env and keep_ansi is refused with a sentence") {
    const std::string bad[] = {
        R"({"code": "1", "keep_ansi": "yes"})",
        R"({"code": "1", "keep_ansi": 1})",
        R"({"code": "1", "env": []})",
        R"({"code": "1", "env": "A=1"})",
        R"({"code": "1", "env": {"": "x"}})",
        R"({"code": "1", "env": {"A=B": "x"}})",
        R"({"code": "1", "env": {"A B": "x"}})",
        R"({"code": "1", "env": {"1A": "x"}})",
        R"({"code": "1", "env": {"A-B": "x"}})",
        R"({"code": "1", "env": {"A\u0000B": "x"}})",
        R"({"code": "1", "env": {"Ä": "x"}})",
        R"({"code": "1", "env": {"A": 1}})",
        R"({"code": "1", "env": {"A": null}})",
        R"({"code": "1", "env": {"A": ["x"]}})",
        R"({"code": "1", "env": {"A": "x\u0000y"}})",
        R"({"code": "1", "env": {"LD_PRELOAD": "/tmp/x.so"}})",
        R"({"code": "1", "env": {"LD_LIBRARY_PATH": "/tmp"}})",
        R"({"code": "1", "env": {"PYTHONPATH": "/tmp"}})",
        R"({"code": "1", "env": {"PYTHONSTARTUP": "x"}})",
        R"({"code": "1", "env": {"JPY_PARENT_PID": "1"}})",
        R"({"code": "1", "env": {"JUPYTER_PATH": "/tmp"}})",
        R"({"code": "1", "env": {"CALLISTO_TOKEN": "x"}})",
        R"({"code": "1", "env": {"PATH": "/tmp"}})",
        R"({"code": "1", "env": {"HOME": "/"}})",
        R"({"code": "1", "env": {"TMPDIR": "/"}})",
        R"({"code": "1", "env": {"IPYTHONDIR": "/"}})",
        R"({"code": "1", "env": {"OK": "1", "LD_AUDIT": "x"}})",
        R"({"code": "1", "env": {"A": ")" + std::string(32 * 1024 + 1, 'v') + R"("}})",
        R"({"code": "1", "env": {")" + std::string(129, 'N') + R"(": "x"}})",
    };
    check_each_refused(
        bad, [](const std::string& body, std::string& error) { return parse(body, error); });
    std::string error;
    CHECK_FALSE(parse(R"({"code": "1", "env": {"LD_PRELOAD": "x"}})", error));
    CHECK(error.find("LD_") != std::string::npos);
    CHECK_FALSE(parse(R"({"code": "1", "env": {"A=B": "x"}})", error));
    CHECK(error.find("not a valid environment variable name") != std::string::npos);

    nlohmann::json many = nlohmann::json::object();
    for (int i = 0; i < 65; ++i) many["V" + std::to_string(i)] = "x";
    CHECK_FALSE(parse(nlohmann::json({{"code", "1"}, {"env", many}}).dump(), error));
    CHECK(error.find("more than 64") != std::string::npos);
    nlohmann::json big = nlohmann::json::object();
    for (int i = 0; i < 9; ++i) big["V" + std::to_string(i)] = std::string(30 * 1024, 'x');
    CHECK_FALSE(parse(nlohmann::json({{"code", "1"}, {"env", big}}).dump(), error));
    CHECK(error.find("larger than") != std::string::npos);
}

TEST_CASE("execution request from a JSON object skips the fields the caller allows") {
    std::string error;
    auto doc = nlohmann::json::parse(R"({"type": "execute", "code": "1", "env": {"A": "1"}})");
    CHECK_FALSE(execution_request_from_json(doc, "", execution_request_limits{}, error));
    CHECK(error.find("'type'") != std::string::npos);
    auto r = execution_request_from_json(doc, "", execution_request_limits{}, error, {"type"});
    REQUIRE(r);
    CHECK(r->env.size() == 1);
    CHECK_FALSE(execution_request_from_json(nlohmann::json::array(), "", execution_request_limits{},
                                            error));
}

TEST_CASE("env names: POSIX names pass, the loader's prefix only as a prefix") {
    CHECK_FALSE(check_env_name("MY_VAR_2", env_limits{}));
    CHECK_FALSE(check_env_name("_x", env_limits{}));
    CHECK_FALSE(check_env_name("LD", env_limits{}));  // only the LD_ prefix is the loader's
}

TEST_CASE("execution request: 'language' names one of the four, case-insensitively") {
    std::string error;
    auto r = parse_execution_request(R"({"code": "ls", "language": "Bash"})", "",
                                     execution_request_limits{}, error);
    REQUIRE(r);
    CHECK(r->language == languages::execution_language::bash);
    r = parse_execution_request(R"({"code": "1", "language": null})", "",
                                execution_request_limits{}, error);
    REQUIRE(r);
    CHECK_FALSE(r->language);
    for (const char* bad :
         {R"({"code": "1", "language": "ruby"})", R"({"code": "1", "language": ""})",
          R"({"code": "1", "language": 3})", R"({"code": "1", "language": ["sql"]})"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_execution_request(bad, "", execution_request_limits{}, error));
        CHECK(error == "'language' must be one of 'python', 'r', 'bash' or 'sql'");
    }
}

TEST_CASE("context request: a language, alone or with a kernel; a bad one refused") {
    std::string error;
    auto r = parse_context_request(R"({"language": "R"})", error);
    REQUIRE(r);
    CHECK(r->language == languages::execution_language::r);
    CHECK(r->kernel.empty());
    r = parse_context_request(R"({"language": "sql", "kernel": "python3"})", error);
    REQUIRE(r);
    CHECK(r->kernel == "python3");
    CHECK_FALSE(parse_context_request(R"({"language": "cobol"})", error));
    CHECK(error == "'language' must be one of 'python', 'r', 'bash' or 'sql'");
    CHECK_FALSE(parse_context_request(R"({"language": 1})", error));
}

TEST_CASE("context request: empty body, a kernel name, and the bad forms") {
    std::string error;
    auto r = parse_context_request("", error);
    REQUIRE(r);
    CHECK(r->kernel.empty());
    r = parse_context_request(R"({"kernel": "python3"})", error);
    REQUIRE(r);
    CHECK(r->kernel == "python3");
    for (const char* body :
         {"x", "[]", R"({"kernel": 3})", R"({"kernel": ""})", R"({"name": "python3"})"}) {
        INFO(body);
        CHECK_FALSE(parse_context_request(body, error));
    }
}

TEST_CASE("context request: from_snapshot names a snapshot; its bad forms are refused") {
    std::string error;
    auto r = parse_context_request(
        R"({"from_snapshot": "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11", "policy": "fresh"})", error);
    REQUIRE(r);
    CHECK(r->from_snapshot == "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11");
    r = parse_context_request(R"({"from_snapshot": null})", error);
    REQUIRE(r);
    CHECK(r->from_snapshot.empty());
    const std::string long_id(65, 'a');
    for (const std::string& body :
         {std::string(R"({"from_snapshot": ""})"), std::string(R"({"from_snapshot": 7})"),
          std::string(R"({"from_snapshot": ["x"]})"),
          std::string("{\"from_snapshot\": \"") + long_id + "\"}"}) {
        INFO(body);
        CHECK_FALSE(parse_context_request(body, error));
        CHECK(error.find("from_snapshot") != std::string::npos);
    }
}

// ---- oversized results -----------------------------------------------------------------------

TEST_CASE("oversized results are written decoded when their type travels as base64") {
    CHECK(is_base64_mime("image/png"));
    CHECK(is_base64_mime("application/pdf"));
    CHECK_FALSE(is_base64_mime("image/svg+xml"));
    CHECK_FALSE(is_base64_mime("text/html"));
}

// ---- execution -------------------------------------------------------------------------------

TEST_CASE("an execution streams events in order and ends once") {
    execution_request req;
    req.code = "print(1)";
    execution e(eid, cid, req, 1 << 20);
    std::vector<std::string> types;
    e.subscribe([&](const nlohmann::json& ev, bool) { types.push_back(ev["type"]); });
    e.mark_started();
    e.add_stream("stdout", "1\n");
    e.add_result({{"text/plain", "2"}}, nlohmann::json::object());
    e.set_error("ValueError", "bad", {"line"});
    e.finish(execution_status::error);
    e.finish(execution_status::ok);  // ignored
    CHECK(types == std::vector<std::string>{"start", "stdout", "result", "error", "end"});
    auto j = e.to_json();
    CHECK(j["status"] == "error");
    CHECK(j["stdout"] == "1\n");
    CHECK(j["error"]["name"] == "ValueError");
    CHECK_FALSE(j.contains("state_preserved"));
}

TEST_CASE("an execution's live stream stops at the budget with one notice; the end has the tail") {
    execution_request req;
    execution e(eid, cid, req, 8);
    int notices = 0;
    std::string streamed;
    e.subscribe([&](const nlohmann::json& ev, bool) {
        if (ev["type"] == "stdout") {
            if (ev.contains("truncated"))
                ++notices;
            else
                streamed += ev["text"].get<std::string>();
        }
    });
    for (int i = 0; i < 10; ++i) e.add_stream("stdout", "abcdefgh");
    e.finish(execution_status::ok);
    CHECK(streamed == "abcd");
    CHECK(notices == 1);
    auto j = e.to_json();
    CHECK(j["truncated"]["stdout_bytes"] == 72);
    CHECK(j["stdout"] == "abcd" + output_budget::marker(72) + "efgh");
}

TEST_CASE("subscribing to a finished execution yields just its end") {
    execution e(eid, cid, {}, 100);
    e.finish(execution_status::timeout, true);
    int calls = 0;
    e.subscribe([&](const nlohmann::json& ev, bool last) {
        ++calls;
        CHECK(last);
        CHECK(ev["execution"]["state_preserved"] == true);
        CHECK(ev["execution"]["status"] == "timeout");
    });
    CHECK(calls == 1);
}

TEST_CASE("following an execution from its start replays what it remembers, then goes live") {
    execution e(eid, cid, {}, 8);
    e.mark_started();
    e.add_stream("stdout", "abcdefghijkl");  // over the budget: head, marker, tail
    e.add_stream("stderr", "w");
    e.add_result({{"text/plain", "1"}}, nlohmann::json::object());
    std::vector<nlohmann::json> seen;
    e.subscribe([&](const nlohmann::json& ev, bool) { seen.push_back(ev); }, true);
    REQUIRE(seen.size() == 4);
    CHECK(seen[0]["type"] == "start");
    CHECK(seen[1]["type"] == "stdout");
    CHECK(seen[1]["text"] == "abcd" + output_budget::marker(4) + "ijkl");
    CHECK(seen[1]["truncated"] == true);
    CHECK(seen[2]["text"] == "w");
    CHECK(seen[3]["type"] == "result");
    e.set_error("E", "v", {});
    e.finish(execution_status::error);
    REQUIRE(seen.size() == 6);
    CHECK(seen[4]["type"] == "error");
    CHECK(seen[5]["type"] == "end");

    std::vector<std::string> types;
    e.subscribe([&](const nlohmann::json& ev, bool) { types.push_back(ev["type"]); }, true);
    CHECK(types == std::vector<std::string>{"start", "stdout", "stderr", "result", "error", "end"});
    types.clear();
    execution queued(eid, cid, {}, 8);
    queued.subscribe([&](const nlohmann::json& ev, bool) { types.push_back(ev["type"]); }, true);
    CHECK(types.empty());  // nothing happened yet
}

// ---- the events WebSocket's messages -----------------------------------------------------------

TEST_CASE("events messages: execute, follow and interrupt, with an optional request_id") {
    std::string error, rid;
    auto c = parse_events_command(
        R"({"type": "execute", "code": "1", "timeout": 2, "env": {"A": "b"}, "request_id": "r1"})",
        {}, error, rid);
    REQUIRE(c);
    CHECK(c->type == events_command::kind::execute);
    CHECK(c->request.code == "1");
    CHECK(c->request.env.size() == 1);
    CHECK(c->request_id == "r1");
    c = parse_events_command(R"({"type": "follow", "execution_id": ")" + eid + "\"}", {}, error,
                             rid);
    REQUIRE(c);
    CHECK(c->type == events_command::kind::follow);
    CHECK(c->execution_id == eid);
    CHECK(rid.empty());
    c = parse_events_command(R"({"type": "interrupt", "execution_id": ")" + eid + "\"}", {}, error,
                             rid);
    REQUIRE(c);
    CHECK(c->type == events_command::kind::interrupt);
}

TEST_CASE("events messages: every bad form is refused with a sentence") {
    const std::string bad[] = {
        "",
        "not json",
        "[]",
        "\"execute\"",
        "{}",
        R"({"type": 1})",
        R"({"type": "run", "code": "1"})",
        R"({"type": "execute"})",
        R"({"type": "execute", "code": 5})",
        R"({"type": "execute", "code": "1", "timeout": -1})",
        R"({"type": "execute", "code": "1", "env": {"LD_PRELOAD": "x"}})",
        R"({"type": "execute", "code": "1", "bogus": 1})",
        R"({"type": "follow"})",
        R"({"type": "follow", "execution_id": 3})",
        R"({"type": "follow", "execution_id": "not-an-id"})",
        R"({"type": "interrupt", "execution_id": ")" + eid + R"(", "code": "1"})",
        R"({"type": "execute", "code": "1", "request_id": ""})",
        R"({"type": "execute", "code": "1", "request_id": "has space"})",
        R"({"type": "execute", "code": "1", "request_id": 7})",
    };
    for (const auto& text : bad) {
        INFO(text);
        std::string error, rid;
        CHECK_FALSE(parse_events_command(text, {}, error, rid));
        CHECK_FALSE(error.empty());
    }
    std::string error, rid;
    CHECK_FALSE(parse_events_command(R"({"type": "execute", "request_id": "r9"})", {}, error, rid));
    CHECK(rid == "r9");  // the refusal can name the request
    CHECK(error.find("'code'") != std::string::npos);
}

// ---- routes ----------------------------------------------------------------------------------

TEST_CASE("router maps the /v1 interpreter routes") {
    CHECK(match_route("GET", "/v1/languages", false).name() == "languages_list");
    CHECK(match_route("GET", "/v1/languages/", false).name() == "languages_list");
    auto post_languages = match_route("POST", "/v1/languages", false);
    CHECK(post_languages.name() == "method_not_allowed");
    CHECK(post_languages.allow == "GET");
    CHECK(match_route("GET", "/v1/languages/python", false).name() == "not_found");
    CHECK(match_route("GET", "/v1/contexts", false).name() == "contexts_list");
    CHECK(match_route("POST", "/v1/contexts/", false).name() == "context_create");
    auto g = match_route("GET", "/v1/contexts/" + cid, false);
    CHECK(g.name() == "context_get");
    CHECK(g.param("context_id") == cid);
    CHECK(match_route("DELETE", "/v1/contexts/" + cid, false).name() == "context_delete");
    CHECK(match_route("POST", "/v1/contexts/" + cid + "/restart", false).name() ==
          "context_restart");
    CHECK(match_route("POST", "/v1/contexts/" + cid + "/executions", false).name() ==
          "execution_create");
    CHECK(match_route("GET", "/v1/contexts/" + cid + "/executions", false).name() ==
          "executions_list");
    auto e = match_route("GET", "/v1/contexts/" + cid + "/executions/" + eid + "?token=t", false);
    CHECK(e.name() == "execution_get");
    CHECK(e.param("execution_id") == eid);
    CHECK(e.query == "token=t");
    CHECK(match_route("DELETE", "/v1/contexts/" + cid + "/executions/" + eid, false).name() ==
          "execution_delete");
    CHECK(match_route("GET", "/v1/contexts/" + cid + "/events", false).name() == "context_events");
    CHECK(match_route("POST", "/v1/contexts/" + cid + "/events", false).allow == "GET");
    CHECK(access_of("execution_get") == route_access::token);
    CHECK(access_of("languages_list") == route_access::token);
    CHECK(match_route("POST", "/v1/contexts/" + cid + "/snapshots", false).name() ==
          "snapshot_create");
    CHECK(match_route("GET", "/v1/contexts/" + cid + "/snapshots", false).allow == "POST");
    CHECK(match_route("GET", "/v1/snapshots", false).name() == "snapshots_list");
    auto s = match_route("GET", "/v1/snapshots/" + eid, false);
    CHECK(s.name() == "snapshot_get");
    CHECK(s.param("snapshot_id") == eid);
    CHECK(match_route("DELETE", "/v1/snapshots/" + eid, false).name() == "snapshot_delete");
    CHECK(match_route("PUT", "/v1/snapshots/" + eid, false).allow == "GET, DELETE");
    CHECK(access_of("snapshot_create") == route_access::token);
}

TEST_CASE("router answers wrong methods on /v1 with 405 and the allowed ones") {
    auto r = match_route("PUT", "/v1/contexts", false);
    CHECK(r.name() == "method_not_allowed");
    CHECK(r.allow == "GET, POST");
    CHECK(match_route("POST", "/v1/contexts/" + cid, false).allow == "GET, DELETE");
    CHECK(match_route("GET", "/v1/contexts/" + cid + "/restart", false).allow == "POST");
    CHECK(match_route("PATCH", "/v1/contexts/" + cid + "/executions/" + eid, false).allow ==
          "GET, DELETE");
}

TEST_CASE("router refuses unknown /v1 paths, and says unsafe ones are invalid") {
    for (const std::string& t :
         std::vector<std::string>{"/v1", "/v1/", "/v1/other", "/v1/contexts/" + cid + "/nope",
                                  "/v1/contexts/" + cid + "/executions/" + eid + "/more"}) {
        INFO(t);
        CHECK(match_route("GET", t, false).name() == "not_found");
    }
    for (const std::string& t :
         std::vector<std::string>{"/v1/contexts/..", "/v1/contexts/%2e%2e/executions",
                                  "/v1/contexts/a%2fb", "/v1/contexts/%00", "/v1//contexts"}) {
        INFO(t);
        CHECK(match_route("GET", t, false).name() == "bad_v1_path");
    }
}

TEST_CASE("context request: network.allow is read in canonical form; none means no network") {
    std::string error;
    auto r = parse_context_request(R"({"kernel": "python3"})", error);
    REQUIRE(r);
    CHECK(r->network_allow.empty());
    r = parse_context_request(R"({"network": {"allow": ["PyPI.org", "127.0.0.1:8080"]}})", error);
    REQUIRE(r);
    CHECK(r->network_allow == std::vector<std::string>{"pypi.org", "127.0.0.1:8080"});
    for (const char* empty : {R"({"network": null})", R"({"network": {}})",
                              R"({"network": {"allow": []}})", R"({"network": {"allow": null}})"}) {
        INFO(empty);
        r = parse_context_request(empty, error);
        REQUIRE(r);
        CHECK(r->network_allow.empty());
    }
}

TEST_CASE("context request: the bad forms of network are refused, naming what is wrong") {
    std::string error;
    std::string many = R"({"network": {"allow": [)";
    for (int i = 0; i < 65; ++i) many += (i ? ",\"h" : "\"h") + std::to_string(i) + ".org\"";
    many += "]}}";
    for (std::string body :
         {std::string(R"({"network": true})"), std::string(R"({"network": ["pypi.org"]})"),
          std::string(R"({"network": {"allow": "pypi.org"}})"),
          std::string(R"({"network": {"allow": [1]}})"),
          std::string(R"({"network": {"deny": ["pypi.org"]}})"),
          std::string(R"({"network": {"allow": ["*.org"]}})"),
          std::string(R"({"network": {"allow": ["127.1"]}})"),
          std::string(R"({"network": {"allow": ["pypi.org:99999"]}})"),
          std::string(R"({"network": {"allow": ["::1"]}})"), many}) {
        INFO(body);
        error.clear();
        CHECK_FALSE(parse_context_request(body, error));
        CHECK(error.rfind("'network' ", 0) == 0);
    }
}

TEST_CASE("network policy: within the server's ceiling, a context gets what it asks for") {
    const std::vector<std::string> server{"pypi.org", "*.pythonhosted.org", "127.0.0.1:8080"};
    CHECK_FALSE(network_refusal({"pypi.org", "files.pythonhosted.org:443", "127.0.0.1:8080"},
                                server, std::nullopt));
}

TEST_CASE("network policy: more than the server's ceiling is refused, naming the rules") {
    const std::vector<std::string> server{"pypi.org"};
    auto why = network_refusal({"pypi.org", "evil.org", "pypi.org:8080"}, server, std::nullopt);
    REQUIRE(why);
    CHECK(*why ==
          "network.allow asks for more than this server allows (--egress-allow): evil.org, "
          "pypi.org:8080");
    // No ceiling at all: nothing may be had.
    CHECK(network_refusal({"pypi.org"}, {}, std::nullopt));
}

TEST_CASE(
    "network policy: a user's list narrows the server's; a context asking past it is refused") {
    const std::vector<std::string> server{"pypi.org", "*.example.org", "127.0.0.1:8080"};
    const std::optional<std::vector<std::string>> user{{"pypi.org"}};
    CHECK_FALSE(network_refusal({"pypi.org"}, server, user));
    auto why = network_refusal({"pypi.org", "a.example.org"}, server, user);
    REQUIRE(why);
    CHECK(*why ==
          "network.allow asks for more than your user may have (egress_allow in the users "
          "file): a.example.org");
    // A user's list beyond the server's does not widen it: the server's ceiling decides first.
    const std::optional<std::vector<std::string>> generous{{"pypi.org", "evil.org"}};
    auto over = network_refusal({"evil.org"}, server, generous);
    REQUIRE(over);
    CHECK(over->find("--egress-allow): evil.org") != std::string::npos);
    // An empty list: the user may have no network.
    CHECK(network_refusal({"pypi.org"}, server, std::vector<std::string>{}));
}
