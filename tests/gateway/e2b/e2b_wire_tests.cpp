// The E2B facade's wire pieces (gateway/e2b/): the bodies the SDK sends, the NDJSON lines it
// reads, Connect's envelopes and the error shapes. Every bad form of every body.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gateway/e2b/connect_envelope.hpp"
#include "gateway/e2b/e2b_api.hpp"
#include "gateway/e2b/e2b_errors.hpp"
#include "gateway/e2b/e2b_requests.hpp"
#include "gateway/e2b/execution_lines.hpp"

using namespace callisto::gateway;
using namespace callisto::gateway::e2b;
using nlohmann::json;

namespace {
const request_limits limits{};
}

TEST_CASE("create sandbox takes the SDK's body and ignores members it does not act on") {
    std::string error;
    auto r = parse_create_sandbox(
        R"({"templateID":"python3","metadata":{"a":"1"},"envVars":{"FOO":"bar"},"timeout":60,
            "mcp":null,"allow_internet_access":true,"network":{},"autoPause":false})",
        limits, error);
    REQUIRE_MESSAGE(r, error);
    CHECK(r->template_id == "python3");
    CHECK(r->metadata.at("a") == "1");
    REQUIRE(r->env.size() == 1);
    CHECK(r->env[0].first == "FOO");
    CHECK(r->timeout == std::chrono::seconds(60));
    auto empty = parse_create_sandbox("", limits, error);
    REQUIRE(empty);
    CHECK(empty->template_id.empty());
    CHECK(!empty->timeout);
}

TEST_CASE("create sandbox refuses every malformed body") {
    for (const char* body :
         {"{", "[]", "42", R"({"templateID":5})", R"({"metadata":[]})", R"({"metadata":{"a":1}})",
          R"({"envVars":{"PATH":"/x"}})", R"({"envVars":"FOO=1"})", R"({"envVars":{"A":2}})",
          R"({"timeout":"60"})", R"({"timeout":-1})", R"({"timeout":1.5})",
          R"({"timeout":99999999999})"}) {
        std::string error;
        CHECK_MESSAGE(!parse_create_sandbox(body, limits, error), body);
        CHECK_MESSAGE(!error.empty(), body);
    }
    json many = {{"metadata", json::object()}};
    for (int i = 0; i < 100; ++i) many["metadata"]["k" + std::to_string(i)] = "v";
    std::string error;
    CHECK(!parse_create_sandbox(many.dump(), limits, error));
}

TEST_CASE("create sandbox maps network.allowOut onto egress rules, deny-all being Callisto's own") {
    std::string error;
    using strings = std::vector<std::string>;
    // What the SDK sends for allowOut with denyOut: ({allTraffic}) => [allTraffic].
    auto r = parse_create_sandbox(
        R"({"templateID":"base","allow_internet_access":false,"network":{"allowOut":
            ["PyPI.org.","*.example.org","127.0.0.2:8080","10.1.2.3/32","::1/128","[::1]:81"],
            "denyOut":["0.0.0.0/0"]}})",
        limits, error);
    REQUIRE_MESSAGE(r, error);
    CHECK(r->network_allow ==
          strings{"pypi.org", "*.example.org", "127.0.0.2:8080", "10.1.2.3", "[::1]", "[::1]:81"});
    // allowOut alone: Callisto denies the rest anyway. denyOut of all traffic alone, an empty
    // allowOut, allow_internet_access (the Python SDK always sends true), empty rules and
    // httpsPorts, allowPublicTraffic false and nulls: no network, nothing refused.
    for (const char* body :
         {R"({"network":{"allowOut":["pypi.org"]}})",
          R"({"network":{"denyOut":["0.0.0.0/0","::/0"]}})", R"({"network":{"allowOut":[]}})",
          R"({"allow_internet_access":true})", R"({"allow_internet_access":null})",
          R"({"network":{"rules":{},"httpsPorts":[],"allowPublicTraffic":false}})",
          R"({"network":{"allowOut":null,"denyOut":null,"egressProxy":null}})",
          R"({"network":null})"}) {
        auto ok = parse_create_sandbox(body, limits, error);
        CHECK_MESSAGE(ok, body, " ", error);
    }
    CHECK(parse_create_sandbox(R"({"network":{"allowOut":["pypi.org"]}})", limits, error)
              ->network_allow == strings{"pypi.org"});
    CHECK(parse_create_sandbox(R"({"network":{"denyOut":["0.0.0.0/0"]}})", limits, error)
              ->network_allow.empty());
}

TEST_CASE("create sandbox refuses network options it cannot honour exactly, naming them") {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {R"({"allow_internet_access":"yes"})", "'allow_internet_access' must be a boolean"},
        {R"({"network":[]})", "'network' must be an object"},
        {R"({"network":{"allowOut":"pypi.org"}})", "'network.allowOut' must be an array"},
        {R"({"network":{"allowOut":[7]}})", "'network.allowOut' must be an array of strings"},
        {R"({"network":{"allowOut":["0.0.0.0/0"]}})", "never all traffic"},
        {R"({"network":{"allowOut":["::/0"]}})", "never all traffic"},
        {R"({"network":{"allowOut":["8.8.8.0/24"]}})", "not address ranges"},
        {R"({"network":{"allowOut":["10.0.0.1/33"]}})", "not address ranges"},
        {R"({"network":{"allowOut":["::1/64"]}})", "not address ranges"},
        {R"({"network":{"allowOut":["*.org"]}})", "`*.org`"},
        {R"({"network":{"allowOut":["127.1"]}})", "`127.1`"},
        {R"({"network":{"allowOut":["pypi.org:0"]}})", "`pypi.org:0`"},
        {R"({"network":{"allowOut":["exa mple.org"]}})", "`exa mple.org`"},
        {R"({"network":{"allowOut":[""]}})", "'network.allowOut'"},
        {R"({"network":{"denyOut":"0.0.0.0/0"}})", "'network.denyOut' must be an array"},
        {R"({"network":{"denyOut":[false]}})", "'network.denyOut' must be an array of strings"},
        {R"({"network":{"denyOut":["1.1.1.1"]}})", "`1.1.1.1` cannot be honoured"},
        {R"({"network":{"allowOut":["pypi.org"],"denyOut":["10.0.0.0/8"]}})",
         "`10.0.0.0/8` cannot be honoured"},
        {R"({"network":{"rules":{"api.example.com":[{"transform":{"headers":{"A":"b"}}}]}}})",
         "'network.rules' (request transforms) cannot be honoured"},
        {R"({"network":{"rules":[]}})", "'network.rules' must be an object"},
        {R"({"network":{"egressProxy":{"address":"proxy.example.com:1080"}}})",
         "'network.egressProxy' cannot be honoured"},
        {R"({"network":{"allowPublicTraffic":true}})",
         "'network.allowPublicTraffic': true cannot be honoured"},
        {R"({"network":{"allowPublicTraffic":"no"}})", "must be a boolean"},
        {R"({"network":{"maskRequestHost":"${PORT}-x.example.org"}})",
         "'network.maskRequestHost' cannot be honoured"},
        {R"({"network":{"httpsPorts":[3000]}})", "'network.httpsPorts' cannot be honoured"},
        {R"({"network":{"httpsPorts":3000}})", "'network.httpsPorts' must be an array"},
        {R"({"network":{"allow":["pypi.org"]}})", "unknown member 'allow'"},
    };
    for (const auto& [body, expected] : cases) {
        std::string error;
        CHECK_MESSAGE(!parse_create_sandbox(body, limits, error), body);
        CHECK_MESSAGE(error.find(expected) != std::string::npos, body, " -> ", error);
    }
    json many = {{"network", {{"allowOut", json::array()}}}};
    for (int i = 0; i < 65; ++i)
        many["network"]["allowOut"].push_back("h" + std::to_string(i) + ".example.org");
    std::string error;
    CHECK(!parse_create_sandbox(many.dump(), limits, error));
    CHECK(error.find("at most 64") != std::string::npos);
}

TEST_CASE("setTimeout needs a timeout; connect may leave it out") {
    std::string error;
    CHECK(parse_set_timeout(R"({"timeout":30})", limits, error) == std::chrono::seconds(30));
    for (const char* body : {"", "{}", R"({"timeout":null})", R"({"timeout":"x"})", "{"}) {
        CHECK_MESSAGE(!parse_set_timeout(body, limits, error), body);
        CHECK(!error.empty());
    }
    CHECK(!parse_connect("{}", limits, error));
    CHECK(error.empty());
    CHECK(parse_connect(R"({"timeout":5})", limits, error) == std::chrono::seconds(5));
    CHECK(!parse_connect(R"({"timeout":true})", limits, error));
    CHECK(!error.empty());
    CHECK(!parse_connect("[", limits, error));
    CHECK(!error.empty());
}

TEST_CASE("execute takes code, a context or a language, and env_vars") {
    std::string error;
    auto r = parse_execute(R"({"code":"1+1","env_vars":{"X":"y"}})", limits, error);
    REQUIRE_MESSAGE(r, error);
    CHECK(r->code == "1+1");
    CHECK(r->context_id.empty());
    CHECK(r->env.size() == 1);
    r = parse_execute(R"({"code":"ls","language":"bash"})", limits, error);
    REQUIRE(r);
    CHECK(r->language == languages::execution_language::bash);
    r = parse_execute(R"({"code":"x","context_id":"abc","language":null})", limits, error);
    REQUIRE(r);
    CHECK(r->context_id == "abc");
}

TEST_CASE("execute refuses every malformed body") {
    for (const char* body :
         {"", "{}", "[]", "{", R"({"code":1})", R"({"code":null})",
          R"({"code":"x","context_id":3})", R"({"code":"x","language":"cobol"})",
          R"({"code":"x","language":7})", R"({"code":"x","context_id":"a","language":"python"})",
          R"({"code":"x","env_vars":[]})", R"({"code":"x","env_vars":{"LD_PRELOAD":"a"}})"}) {
        std::string error;
        CHECK_MESSAGE(!parse_execute(body, limits, error), body);
        CHECK_MESSAGE(!error.empty(), body);
    }
    std::string error;
    CHECK(!parse_execute(json({{"code", std::string("a\0b", 3)}}).dump(), limits, error));
}

TEST_CASE("create context takes a language and a cwd, and refuses bad ones") {
    std::string error;
    auto r = parse_create_context(R"({"language":"r","cwd":"/home/user"})", error);
    REQUIRE(r);
    CHECK(r->language == languages::execution_language::r);
    CHECK(r->cwd == "/home/user");
    REQUIRE(parse_create_context("", error));
    for (const char* body :
         {"[", "[]", R"({"language":"js"})", R"({"language":1})", R"({"cwd":5})"}) {
        CHECK_MESSAGE(!parse_create_context(body, error), body);
        CHECK(!error.empty());
    }
}

TEST_CASE("execution events become E2B's lines, one JSON object each") {
    auto one = [](const json& event) {
        auto lines = execution_lines(event);
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].find('\n') == std::string::npos);
        return json::parse(lines[0]);
    };
    CHECK(one({{"type", "stdout"}, {"text", "a\nb\n"}}) ==
          json({{"type", "stdout"}, {"text", "a\nb\n"}}));
    CHECK(one({{"type", "stderr"}, {"text", "w"}})["type"] == "stderr");
    auto result = one({{"type", "result"},
                       {"data",
                        {{"text/plain", "2"},
                         {"image/png", "iVBO"},
                         {"text/html", {"<b>", "x</b>"}},
                         {"application/json", {{"a", 1}}},
                         {"application/x-custom", "c"}}},
                       {"metadata", json::object()},
                       {"main", true}});
    CHECK(result["type"] == "result");
    CHECK(result["text"] == "2");
    CHECK(result["png"] == "iVBO");
    CHECK(result["html"] == "<b>x</b>");
    CHECK(result["json"] == json({{"a", 1}}).dump());
    CHECK(result["application/x-custom"] == "c");
    CHECK(result["is_main_result"] == true);
    CHECK(one({{"type", "result"}, {"data", {{"image/png", "x"}}}})["is_main_result"] == false);
    auto error = one({{"type", "error"},
                      {"name", "ZeroDivisionError"},
                      {"value", "division by zero"},
                      {"traceback", {"line 1", "line 2"}}});
    CHECK(error["traceback"] == "line 1\nline 2");
    CHECK(execution_lines({{"type", "start"}}).empty());
    CHECK(execution_lines({{"type", "queued"}}).empty());
    CHECK(execution_lines("not an object").empty());
    CHECK(json::parse(keepalive_line())["type"] == "keepalive");
}

TEST_CASE("a DataFrame's and a figure's descriptions become the result's data and chart") {
    const json chart = {{"type", "bar"},
                        {"title", "sales"},
                        {"x_label", nullptr},
                        {"elements", {{{"label", "a"}, {"group", "Group 0"}, {"value", 3}}}}};
    // The kernel's columns come as [name, values] pairs, in the frame's order.
    const json columns = json::array(
        {json::array({"b", json::array({"x", nullptr})}), json::array({"a", json::array({1, 2})})});
    auto result = e2b_result({{"text/plain", "<Figure>"},
                              {"image/png", "iVBO"},
                              {"application/vnd.callisto.chart+json", chart}},
                             false);
    CHECK(result["chart"].dump() == chart.dump());
    CHECK(result["png"] == "iVBO");
    CHECK_FALSE(result.contains("application/vnd.callisto.chart+json"));
    result = e2b_result({{"text/plain", "   a"},
                         {"text/html", "<table>"},
                         {"application/vnd.callisto.dataframe+json", columns}},
                        true);
    CHECK(result["data"].dump() == R"({"b":["x",null],"a":[1,2]})");
    CHECK(result["html"] == "<table>");
    CHECK_FALSE(result.contains("application/vnd.callisto.dataframe+json"));
    // The line as written keeps that order.
    const auto lines =
        execution_lines({{"type", "result"},
                         {"main", true},
                         {"data", {{"application/vnd.callisto.dataframe+json", columns}}}});
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] ==
          R"({"type":"result","data":{"b":["x",null],"a":[1,2]},"is_main_result":true})");
    // E2B's own formatters' names, should a kernel send them: a frame as an object.
    const json frame = {{"a", {1, 2}}, {"b", json::array({"x", nullptr})}};
    CHECK(e2b_result({{"e2b/chart", chart}}, false)["chart"].dump() == chart.dump());
    CHECK(e2b_result({{"e2b/data", frame}}, false)["data"].dump() == frame.dump());
    // Over the result caps the gateway puts a file's name or a note in their place: no data or
    // chart then, and no unknown key either; nor for pairs that are not [name, values].
    for (const json& stand_in :
         {json({{"file", "callisto-outputs/e1-0.json"}, {"bytes", 6000000}}),
          json("[... 6000000 bytes dropped: over the result caps ...]"), json(3),
          json::array({json::array({"a"})}), json::array({json::array({1, json::array()})}),
          json::array({json::array({"a", 2})})}) {
        auto left_out = e2b_result({{"text/plain", "t"},
                                    {"application/vnd.callisto.chart+json", stand_in},
                                    {"application/vnd.callisto.dataframe+json", stand_in}},
                                   true);
        CHECK(left_out.dump() == R"({"type":"result","text":"t","is_main_result":true})");
    }
}

TEST_CASE("the end event gives the execution count and the end of execution") {
    auto lines = execution_lines(
        {{"type", "end"}, {"execution", {{"status", "ok"}, {"execution_count", 3}}}});
    REQUIRE(lines.size() == 2);
    CHECK(json::parse(lines[0]) ==
          json({{"type", "number_of_executions"}, {"execution_count", 3}}));
    CHECK(json::parse(lines[1])["type"] == "end_of_execution");
    // A deadline with no error of the kernel's says so.
    lines = execution_lines(
        {{"type", "end"}, {"execution", {{"status", "timeout"}, {"execution_count", nullptr}}}});
    REQUIRE(lines.size() == 2);
    CHECK(json::parse(lines[0])["name"] == "TimeoutError");
    CHECK(json::parse(lines[1])["type"] == "unexpected_end_of_execution");
    lines = execution_lines(
        {{"type", "end"},
         {"execution", {{"status", "error"}, {"error", {{"name", "E"}}}, {"execution_count", 4}}}});
    REQUIRE(lines.size() == 2);
    CHECK(json::parse(lines[1])["type"] == "end_of_execution");
}

TEST_CASE("an envelope round-trips, and a stream needs its end frame") {
    const std::string body = encode_envelope(0, R"({"a":1})") + encode_envelope(end_flag, "{}");
    std::error_code ec;
    auto frames = decode_envelopes(body, 1 << 20, ec);
    REQUIRE(!ec);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].payload == R"({"a":1})");
    CHECK(frames[1].end());
    auto stream = decode_response_stream(body, 1 << 20, ec);
    REQUIRE(stream);
    CHECK(stream->messages.size() == 1);
    CHECK(stream->end == "{}");
    CHECK(!decode_response_stream(encode_envelope(0, "{}"), 1 << 20, ec));
    CHECK(ec == envelope_error::missing_end);
    CHECK(!decode_response_stream(body + encode_envelope(0, "{}"), 1 << 20, ec));
    CHECK(ec == envelope_error::data_after_end);
    CHECK(decode_envelopes("", 10, ec).empty());
    CHECK(!ec);
}

TEST_CASE("a malformed envelope is refused with its reason") {
    std::error_code ec;
    CHECK(decode_envelopes(std::string("\0\0\0", 3), 1 << 20, ec).empty());
    CHECK(ec == envelope_error::truncated_prefix);
    CHECK(decode_envelopes(std::string("\0\0\0\0\x09{}", 7), 1 << 20, ec).empty());
    CHECK(ec == envelope_error::length_past_body);
    CHECK(decode_envelopes(std::string("\0\xff\xff\xff\xff", 5), UINT32_MAX, ec).empty());
    CHECK(ec == envelope_error::length_past_body);
    CHECK(decode_envelopes(encode_envelope(0x01, "{}"), 1 << 20, ec).empty());
    CHECK(ec == envelope_error::compressed);
    CHECK(decode_envelopes(encode_envelope(0x80, "{}"), 1 << 20, ec).empty());
    CHECK(ec == envelope_error::unknown_flags);
    CHECK(decode_envelopes(encode_envelope(0, "{}"), 1, ec).empty());
    CHECK(ec == envelope_error::message_too_large);
    CHECK(!ec.message().empty());
}

TEST_CASE("a server-streaming request holds exactly one message") {
    std::error_code ec;
    auto m = decode_request_message(encode_envelope(0, R"({"path":"/"})"), 1 << 20, ec);
    REQUIRE(m);
    CHECK(*m == R"({"path":"/"})");
    CHECK(!decode_request_message("", 1 << 20, ec));
    CHECK(ec == envelope_error::not_one_message);
    CHECK(
        !decode_request_message(encode_envelope(0, "{}") + encode_envelope(0, "{}"), 1 << 20, ec));
    CHECK(ec == envelope_error::not_one_message);
    CHECK(!decode_request_message(encode_envelope(end_flag, "{}"), 1 << 20, ec));
    CHECK(ec == envelope_error::not_one_message);
    CHECK(!decode_request_message(encode_envelope(1, "{}"), 1 << 20, ec));
    CHECK(ec == envelope_error::compressed);
}

TEST_CASE("errors have E2B's and Connect's shapes") {
    auto res = e2b_error(http::status::not_found, "sandbox \"x\" not found");
    CHECK(res.result() == http::status::not_found);
    auto body = json::parse(res.body());
    CHECK(body["code"] == 404);
    CHECK(body["message"] == "sandbox \"x\" not found");
    auto c = connect_error(connect_code::not_found, "no such file");
    CHECK(c.result() == http::status::not_found);
    CHECK(json::parse(c.body())["code"] == "not_found");
    CHECK(http_status_of(connect_code::already_exists) == http::status::conflict);
    CHECK(http_status_of(connect_code::invalid_argument) == http::status::bad_request);
}

TEST_CASE("a host names its sandbox in E2B's shape; with --e2b-domain only under that domain") {
    // Without a domain: any host's first label "<port>-<id>".
    CHECK(sandbox_id_from_host("49999-abc123.e2b.app", "") == "abc123");
    CHECK(sandbox_id_from_host("49999-abc123.anything.example:443", "") == "abc123");
    CHECK(sandbox_id_from_host("127.0.0.1:8888", "").empty());
    CHECK(sandbox_id_from_host("localhost", "").empty());
    CHECK(sandbox_id_from_host("", "").empty());
    // With one: exactly one label before it, the port a number, the domain in any case.
    const std::string_view domain = "sandbox.test";
    CHECK(sandbox_id_from_host("49999-abc123.sandbox.test", domain) == "abc123");
    CHECK(sandbox_id_from_host("49983-abc123.SANDBOX.Test:443", domain) == "abc123");
    CHECK(sandbox_id_from_host("49999-abc123.sandbox.test.", domain) == "abc123");
    for (const char* other :
         {"49999-abc123.other.test", "49999-abc123.evil.sandbox.test", "49999-abc123.sandbox.testx",
          "49999-abc123.xsandbox.test", "abc123.sandbox.test", "port-abc123.sandbox.test",
          "-abc123.sandbox.test", "123456-abc123.sandbox.test", "49999-abc123", "sandbox.test",
          "127.0.0.1:8888", ""}) {
        CAPTURE(other);
        CHECK(sandbox_id_from_host(other, domain).empty());
    }
}
