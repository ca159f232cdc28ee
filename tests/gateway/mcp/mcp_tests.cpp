// The MCP endpoint without a kernel: JSON-RPC parsing and every bad form, version
// negotiation, tool argument checking, tool result content, the dispatcher, and the HTTP
// rules of the Streamable HTTP transport (sessions, headers, status codes) over a scripted
// tool backend.

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <set>
#include <utility>

#include <boost/beast/http/field.hpp>

#include "common/encoding.hpp"
#include "gateway/interpreter/oversized_result.hpp"
#include "gateway/mcp/json_rpc.hpp"
#include "gateway/mcp/mcp_dispatcher.hpp"
#include "gateway/mcp/mcp_endpoint.hpp"
#include "gateway/mcp/mcp_protocol.hpp"
#include "gateway/mcp/mcp_session_registry.hpp"
#include "gateway/mcp/mcp_tools.hpp"
#include "gateway/mcp/tool_content.hpp"
#include "tests/gateway/route_table_matching.hpp"

using namespace callisto::gateway;
using namespace callisto::gateway::mcp;
using nlohmann::json;

namespace {

// Answers every call at once with a text naming the call; remembers what it was asked.
struct scripted_tools : tool_backend {
    std::vector<tool_call> calls;
    std::vector<std::string> call_ids;
    std::vector<std::string> cancelled;
    int closed = 0;
    bool hold = false;  // keep the answer back (a call in flight)
    std::function<void(json)> held;
    // Answers the held call once, and lets go of its callback as a real backend does (it holds
    // the session: kept, it would be a cycle).
    void answer_held(json result) { std::exchange(held, {})(std::move(result)); }
    void call(const std::string& id, tool_call c, std::function<void(json)> done) override {
        call_ids.push_back(id);
        calls.push_back(c);
        auto answer = text_tool_result("called " + std::to_string(c.index()));
        if (hold) held = [done](json r) { done(std::move(r)); };
        if (hold) return;
        done(answer);
    }
    void cancel(const std::string& id) override { cancelled.push_back(id); }
    void close() override { ++closed; }
};

tool_call parse_ok(const json& params) {
    std::string error;
    auto c = parse_tool_call(params, tool_limits{}, error);
    INFO(error);
    REQUIRE(c);
    return *c;
}

std::string parse_fails(const json& params, tool_limits limits = {}) {
    std::string error;
    auto c = parse_tool_call(params, limits, error);
    CHECK_FALSE(c);
    CHECK_FALSE(error.empty());
    return error;
}

struct fake_clock {
    std::shared_ptr<mcp_session::clock::time_point> now =
        std::make_shared<mcp_session::clock::time_point>(std::chrono::hours(1));
    void advance(std::chrono::seconds s) { *now += s; }
    mcp_session_registry::clock_fn fn() const {
        return [now = now] { return *now; };
    }
};

const user ana{"ana", false, 0};
const user bob{"bob", false, 0};

struct endpoint_fixture {
    fake_clock clock;
    std::vector<std::shared_ptr<scripted_tools>> backends;
    mcp_session_registry registry{[this](const user&, const std::string&) {
                                      backends.push_back(std::make_shared<scripted_tools>());
                                      return backends.back();
                                  },
                                  mcp_session_limits{std::chrono::seconds(600), 2},
                                  callisto::logger(), clock.fn()};
    mcp_endpoint endpoint{registry, tool_limits{}, "9.9.9"};

    http_response send(http::verb method, const std::string& body, const std::string& session = "",
                       const user& who = ana, std::map<std::string, std::string> headers = {}) {
        http_request req{method, "/mcp", 11};
        req.set(http::field::content_type, "application/json");
        req.set(http::field::accept, "application/json, text/event-stream");
        req.set(http::field::host, "127.0.0.1:8888");
        if (!session.empty()) req.set("Mcp-Session-Id", session);
        for (auto& [k, v] : headers) req.set(k, v);
        req.body() = body;
        req.prepare_payload();
        std::optional<http_response> out;
        endpoint.handle(req, who, [&](http_response res) { out = std::move(res); });
        REQUIRE(out);
        return std::move(*out);
    }
    http_response post(const json& msg, const std::string& session = "", const user& who = ana) {
        return send(http::verb::post, msg.dump(), session, who);
    }
    std::string initialize(const user& who = ana, const std::string& version = "2025-06-18") {
        auto res = post({{"jsonrpc", "2.0"},
                         {"id", 0},
                         {"method", "initialize"},
                         {"params",
                          {{"protocolVersion", version},
                           {"capabilities", json::object()},
                           {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}},
                        "", who);
        REQUIRE(res.result() == http::status::ok);
        return std::string(res["Mcp-Session-Id"]);
    }
};

json body_of(const http_response& res) { return json::parse(res.body()); }

json request(std::string method, json params = json::object(), json id = 1) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

}  // namespace

// ---- JSON-RPC ------------------------------------------------------------------------------

TEST_CASE("json-rpc: a malformed body is a parse error") {
    for (std::string body : {"", "{", "{\"jsonrpc\": \"2.0\",}", "nul", "\xff\xfe"}) {
        auto m = parse_rpc_message(body);
        CAPTURE(body);
        CHECK(m.kind == message_kind::invalid);
        CHECK(m.error_code == rpc_error::parse_error);
    }
}

TEST_CASE("json-rpc: tools/call arguments nested 100,000 deep are a parse error, not a crash") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)"
                             R"({"name":"run_code","arguments":{"code":)" +
                             deep + "}}}";
    auto m = parse_rpc_message(body);
    CHECK(m.kind == message_kind::invalid);
    CHECK(m.error_code == rpc_error::parse_error);
    CHECK(m.error == "the body is nested deeper than 1000 levels");
}

TEST_CASE("json-rpc: batches are refused with a sentence saying so") {
    for (std::string body : {"[]", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"}) {
        auto m = parse_rpc_message(body);
        CHECK(m.kind == message_kind::invalid);
        CHECK(m.error_code == rpc_error::invalid_request);
        CHECK(m.error.find("batch") != std::string::npos);
    }
}

TEST_CASE("json-rpc: every malformed message is an invalid request") {
    for (std::string body :
         {R"("ping")", "42", "null", R"({"id":1,"method":"ping"})",
          R"({"jsonrpc":"1.0","id":1,"method":"ping"})",
          R"({"jsonrpc":2.0,"id":1,"method":"ping"})", R"({"jsonrpc":"2.0","id":1})",
          R"({"jsonrpc":"2.0","id":1,"result":{},"error":{}})", R"({"jsonrpc":"2.0","result":{}})",
          R"({"jsonrpc":"2.0","id":1,"method":5})", R"({"jsonrpc":"2.0","id":1,"method":""})",
          R"({"jsonrpc":"2.0","id":null,"method":"ping"})",
          R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})",
          R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})",
          R"({"jsonrpc":"2.0","id":true,"method":"ping"})"}) {
        auto m = parse_rpc_message(body);
        CAPTURE(body);
        CHECK(m.kind == message_kind::invalid);
        CHECK(m.error_code == rpc_error::invalid_request);
        CHECK_FALSE(m.error.empty());
    }
}

TEST_CASE("json-rpc: an invalid request keeps its id when the id itself is usable") {
    auto m = parse_rpc_message(R"({"jsonrpc":"1.0","id":"abc","method":"ping"})");
    CHECK(m.kind == message_kind::invalid);
    CHECK(m.id == "abc");
    auto p = parse_rpc_message(R"({"jsonrpc":"2.0","id":7,"method":"ping","params":[1]})");
    CHECK(p.kind == message_kind::invalid);
    CHECK(p.error_code == rpc_error::invalid_params);
    CHECK(p.id == 7);
}

TEST_CASE("json-rpc: requests, notifications and responses are told apart") {
    auto r = parse_rpc_message(R"({"jsonrpc":"2.0","id":"x-1","method":"tools/list"})");
    CHECK(r.kind == message_kind::request);
    CHECK(r.id == "x-1");
    CHECK(r.method == "tools/list");
    CHECK(r.params.is_object());
    auto i = parse_rpc_message(R"({"jsonrpc":"2.0","id":0,"method":"ping","params":{"a":1}})");
    CHECK(i.kind == message_kind::request);
    CHECK(i.id == 0);
    CHECK(i.params["a"] == 1);
    auto n = parse_rpc_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    CHECK(n.kind == message_kind::notification);
    auto s = parse_rpc_message(R"({"jsonrpc":"2.0","id":3,"result":{}})");
    CHECK(s.kind == message_kind::response);
    auto e = parse_rpc_message(R"({"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}})");
    CHECK(e.kind == message_kind::response);
}

TEST_CASE("json-rpc: results and errors have the 2.0 shape") {
    CHECK(rpc_result(1, json::object()) ==
          json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}});
    auto e = rpc_error_object(nullptr, -32601, "no");
    CHECK(e["id"].is_null());
    CHECK(e["error"]["code"] == -32601);
    CHECK(e["error"]["message"] == "no");
}

// ---- lifecycle -----------------------------------------------------------------------------

TEST_CASE("initialize answers the client's version when supported, else the latest") {
    std::string error;
    CHECK(negotiate_protocol_version({{"protocolVersion", "2025-03-26"}}, error) == "2025-03-26");
    CHECK(negotiate_protocol_version({{"protocolVersion", "2025-06-18"}}, error) == "2025-06-18");
    CHECK(negotiate_protocol_version({{"protocolVersion", "2099-01-01"}}, error) ==
          std::string(latest_protocol_version));
    CHECK(negotiate_protocol_version({{"protocolVersion", "2024-11-05"}}, error) == "2025-06-18");
    for (json bad :
         {json::object(), json{{"protocolVersion", 20250618}}, json{{"protocolVersion", ""}},
          json{{"protocolVersion", "2025-06-18"}, {"capabilities", "all"}},
          json{{"protocolVersion", "2025-06-18"}, {"clientInfo", {{"version", "1"}}}}}) {
        CAPTURE(bad.dump());
        error.clear();
        CHECK_FALSE(negotiate_protocol_version(bad, error));
        CHECK_FALSE(error.empty());
    }
    auto r = initialize_result("2025-03-26", "1.2.3");
    CHECK(r["protocolVersion"] == "2025-03-26");
    CHECK(r["capabilities"].contains("tools"));
    CHECK(r["serverInfo"]["name"] == "callisto");
    CHECK(r["serverInfo"]["version"] == "1.2.3");
}

// ---- tools ---------------------------------------------------------------------------------

TEST_CASE("tool definitions: named once each, with strict object schemas") {
    auto tools = tool_definitions(tool_limits{});
    std::set<std::string> names;
    for (const auto& t : tools) {
        CHECK(names.insert(t["name"].get<std::string>()).second);
        CHECK_FALSE(t["description"].get<std::string>().empty());
        CHECK(t["inputSchema"]["type"] == "object");
        CHECK(t["inputSchema"]["additionalProperties"] == false);
        for (const auto& req : t["inputSchema"]["required"])
            CHECK(t["inputSchema"]["properties"].contains(req.get<std::string>()));
    }
    CHECK(names == std::set<std::string>{"run_code", "upload_file", "list_files", "read_file",
                                         "restart_context", "snapshot_context", "list_snapshots",
                                         "delete_snapshot", "restore_snapshot", "fork_context",
                                         "pause_context", "resume_context"});
}

TEST_CASE("tools/call arguments: the good forms") {
    auto run =
        std::get<run_code_args>(parse_ok({{"name", "run_code"}, {"arguments", {{"code", "1+1"}}}}));
    CHECK(run.code == "1+1");
    CHECK(run.timeout == std::chrono::seconds(120));
    auto timed = std::get<run_code_args>(
        parse_ok({{"name", "run_code"}, {"arguments", {{"code", "x"}, {"timeout_seconds", 2.5}}}}));
    CHECK(timed.timeout == std::chrono::milliseconds(2500));
    auto up = std::get<upload_file_args>(
        parse_ok({{"name", "upload_file"},
                  {"arguments", {{"path", "d/a.csv"}, {"content", "a,b\n1,2\n"}}}}));
    CHECK(up.path == "d/a.csv");
    CHECK(up.bytes == "a,b\n1,2\n");
    auto bin = std::get<upload_file_args>(parse_ok(
        {{"name", "upload_file"},
         {"arguments", {{"path", "b.bin"}, {"content", "AAH/"}, {"encoding", "base64"}}}}));
    CHECK(bin.bytes == std::string("\0\1\xff", 3));
    CHECK(std::holds_alternative<list_files_args>(parse_ok({{"name", "list_files"}})));
    CHECK(std::holds_alternative<list_files_args>(
        parse_ok({{"name", "list_files"}, {"arguments", json::object()}})));
    CHECK(std::get<list_files_args>(
              parse_ok({{"name", "list_files"}, {"arguments", {{"include_hidden", true}}}}))
              .include_hidden);
    CHECK_FALSE(std::get<list_files_args>(parse_ok({{"name", "list_files"}})).include_hidden);
    CHECK(parse_fails({{"name", "list_files"}, {"arguments", {{"include_hidden", "yes"}}}})
              .find("true or false") != std::string::npos);
    CHECK(std::get<read_file_args>(
              parse_ok({{"name", "read_file"}, {"arguments", {{"path", "out.png"}}}}))
              .path == "out.png");
    CHECK(std::holds_alternative<restart_context_args>(parse_ok({{"name", "restart_context"}})));
}

TEST_CASE("run_code keeps a model-sized output budget unless it asks for more, within limits") {
    auto run =
        std::get<run_code_args>(parse_ok({{"name", "run_code"}, {"arguments", {{"code", "1"}}}}));
    CHECK(run.output_budget == 32u << 10);
    auto more = std::get<run_code_args>(parse_ok(
        {{"name", "run_code"}, {"arguments", {{"code", "1"}, {"output_budget", 200000}}}}));
    CHECK(more.output_budget == 200000);
    for (const json& bad : {json(255), json(-1), json(2 << 20), json(1.5), json("1k"), json(true)})
        CHECK(parse_fails(
                  {{"name", "run_code"}, {"arguments", {{"code", "1"}, {"output_budget", bad}}}})
                  .find("\"output_budget\" must be a whole number of bytes from 256 to 1048576") !=
              std::string::npos);
    auto schema = tool_definitions(tool_limits{})[0]["inputSchema"]["properties"]["output_budget"];
    CHECK(schema["maximum"] == 1 << 20);
}

TEST_CASE("tools/call arguments: every tool takes a language, one of the four") {
    using languages::execution_language;
    auto run = std::get<run_code_args>(parse_ok(
        {{"name", "run_code"}, {"arguments", {{"code", "SELECT 1"}, {"language", "sql"}}}}));
    CHECK(run.language == execution_language::sql);
    CHECK_FALSE(
        std::get<run_code_args>(parse_ok({{"name", "run_code"}, {"arguments", {{"code", "1"}}}}))
            .language);
    CHECK(std::get<upload_file_args>(
              parse_ok({{"name", "upload_file"},
                        {"arguments", {{"path", "a.csv"}, {"content", "x"}, {"language", "R"}}}}))
              .language == execution_language::r);
    CHECK(std::get<list_files_args>(
              parse_ok({{"name", "list_files"}, {"arguments", {{"language", "bash"}}}}))
              .language == execution_language::bash);
    CHECK(std::get<read_file_args>(
              parse_ok({{"name", "read_file"}, {"arguments", {{"path", "a"}, {"language", "r"}}}}))
              .language == execution_language::r);
    CHECK(std::get<restart_context_args>(
              parse_ok({{"name", "restart_context"}, {"arguments", {{"language", "python"}}}}))
              .language == execution_language::python);
    for (json bad : {json("cobol"), json(""), json(1), json::array({"sql"})})
        CHECK(parse_fails(
                  {{"name", "run_code"}, {"arguments", {{"code", "x"}, {"language", bad}}}}) ==
              R"(run_code: "language" must be "python", "r", "bash" or "sql")");
    // Those about a kernel of the session; the snapshots' and the ones by id have none.
    std::set<std::string> with_language;
    for (const auto& tool : tool_definitions(tool_limits{})) {
        CAPTURE(tool["name"]);
        if (!tool["inputSchema"]["properties"].contains("language")) continue;
        with_language.insert(tool["name"].get<std::string>());
        CHECK(tool["inputSchema"]["properties"]["language"]["enum"] ==
              json({"python", "r", "bash", "sql"}));
    }
    CHECK(with_language == std::set<std::string>{"run_code", "upload_file", "list_files",
                                                 "read_file", "restart_context", "snapshot_context",
                                                 "fork_context"});
}

namespace {

const std::string a_context = "0b5e2a4c-6f1d-4c3e-9a8b-1d2e3f405162";
const std::string a_snapshot = "7c9d1e2f-3a4b-4c5d-8e9f-a0b1c2d3e4f5";

}  // namespace

TEST_CASE("snapshot, fork, pause and resume tools: the good forms") {
    auto snap = std::get<snapshot_context_args>(parse_ok({{"name", "snapshot_context"}}));
    CHECK(snap.context_id.empty());  // the session's own
    CHECK_FALSE(snap.language);
    CHECK(std::get<snapshot_context_args>(
              parse_ok({{"name", "snapshot_context"}, {"arguments", {{"context_id", a_context}}}}))
              .context_id == a_context);
    CHECK(std::holds_alternative<list_snapshots_args>(parse_ok({{"name", "list_snapshots"}})));
    CHECK(std::get<delete_snapshot_args>(
              parse_ok({{"name", "delete_snapshot"}, {"arguments", {{"snapshot_id", a_snapshot}}}}))
              .snapshot_id == a_snapshot);
    CHECK(std::get<restore_snapshot_args>(parse_ok({{"name", "restore_snapshot"},
                                                    {"arguments", {{"snapshot_id", a_snapshot}}}}))
              .snapshot_id == a_snapshot);
    auto fork = std::get<fork_context_args>(parse_ok({{"name", "fork_context"}}));
    CHECK(fork.count == 1);
    CHECK(fork.context_id.empty());
    auto forks = std::get<fork_context_args>(parse_ok(
        {{"name", "fork_context"}, {"arguments", {{"count", 16}, {"context_id", a_context}}}}));
    CHECK(forks.count == 16);
    CHECK(forks.context_id == a_context);
    CHECK(std::get<pause_context_args>(
              parse_ok({{"name", "pause_context"}, {"arguments", {{"context_id", a_context}}}}))
              .context_id == a_context);
    CHECK(std::get<resume_context_args>(
              parse_ok({{"name", "resume_context"}, {"arguments", {{"context_id", a_context}}}}))
              .context_id == a_context);
    auto run = std::get<run_code_args>(parse_ok(
        {{"name", "run_code"}, {"arguments", {{"code", "x"}, {"context_id", a_context}}}}));
    CHECK(run.context_id == a_context);
    CHECK(std::get<run_code_args>(parse_ok({{"name", "run_code"}, {"arguments", {{"code", "x"}}}}))
              .context_id.empty());
    // The file tools and restart_context reach a context by id too, or the session's.
    CHECK(std::get<upload_file_args>(
              parse_ok({{"name", "upload_file"},
                        {"arguments",
                         {{"path", "a.txt"}, {"content", "x"}, {"context_id", a_context}}}}))
              .context_id == a_context);
    CHECK(std::get<list_files_args>(
              parse_ok({{"name", "list_files"}, {"arguments", {{"context_id", a_context}}}}))
              .context_id == a_context);
    CHECK(std::get<read_file_args>(
              parse_ok({{"name", "read_file"},
                        {"arguments", {{"path", "a.txt"}, {"context_id", a_context}}}}))
              .context_id == a_context);
    CHECK(std::get<restart_context_args>(
              parse_ok({{"name", "restart_context"}, {"arguments", {{"context_id", a_context}}}}))
              .context_id == a_context);
    CHECK(std::get<list_files_args>(parse_ok({{"name", "list_files"}})).context_id.empty());
    // The schema offers what the parser takes.
    for (const auto& tool : tool_definitions(tool_limits{})) {
        CAPTURE(tool["name"]);
        const bool by_id = tool["inputSchema"]["properties"].contains("context_id");
        CHECK(by_id == (tool["name"] != "list_snapshots" && tool["name"] != "delete_snapshot" &&
                        tool["name"] != "restore_snapshot"));
    }
    for (const auto& tool : tool_definitions(tool_limits{}))
        if (tool["name"] == "fork_context") {
            CHECK(tool["inputSchema"]["properties"]["count"]["minimum"] == 1);
            CHECK(tool["inputSchema"]["properties"]["count"]["maximum"] == 16);
        }
}

TEST_CASE("snapshot, fork, pause and resume tools: every bad form is refused with a reason") {
    // A count out of range, or not a whole number.
    for (const json& n : {json(0), json(-1), json(17), json(1000000), json(1.5), json("2"),
                          json(true), json(nullptr)})
        CHECK(parse_fails({{"name", "fork_context"}, {"arguments", {{"count", n}}}}) ==
              "fork_context: \"count\" must be a whole number from 1 to 16");
    // Ids that could never name anything: malformed, upper case, a path.
    for (const json& id : {json("abc"), json(""), json("0B5E2A4C-6F1D-4C3E-9A8B-1D2E3F405162"),
                           json("../0b5e2a4c-6f1d-4c3e-9a8b-1d2e3f40516"), json(7)}) {
        CAPTURE(id);
        for (const char* tool :
             {"pause_context", "resume_context", "snapshot_context", "fork_context"})
            CHECK(parse_fails({{"name", tool}, {"arguments", {{"context_id", id}}}})
                      .find("\"context_id\"") != std::string::npos);
        CHECK(
            parse_fails({{"name", "run_code"}, {"arguments", {{"code", "1"}, {"context_id", id}}}})
                .find("\"context_id\"") != std::string::npos);
        CHECK(
            parse_fails({{"name", "upload_file"},
                         {"arguments", {{"path", "a.txt"}, {"content", "x"}, {"context_id", id}}}})
                .find("\"context_id\"") != std::string::npos);
        CHECK(parse_fails({{"name", "list_files"}, {"arguments", {{"context_id", id}}}})
                  .find("\"context_id\"") != std::string::npos);
        CHECK(parse_fails(
                  {{"name", "read_file"}, {"arguments", {{"path", "a.txt"}, {"context_id", id}}}})
                  .find("\"context_id\"") != std::string::npos);
        CHECK(parse_fails({{"name", "restart_context"}, {"arguments", {{"context_id", id}}}})
                  .find("\"context_id\"") != std::string::npos);
        for (const char* tool : {"delete_snapshot", "restore_snapshot"})
            CHECK(parse_fails({{"name", tool}, {"arguments", {{"snapshot_id", id}}}})
                      .find("\"snapshot_id\"") != std::string::npos);
    }
    // Required ids missing; a context id where a snapshot id belongs is an unknown argument.
    CHECK(parse_fails({{"name", "pause_context"}}) ==
          "pause_context: missing required argument \"context_id\"");
    CHECK(parse_fails({{"name", "resume_context"}, {"arguments", json::object()}}) ==
          "resume_context: missing required argument \"context_id\"");
    CHECK(parse_fails({{"name", "restore_snapshot"}}) ==
          "restore_snapshot: missing required argument \"snapshot_id\"");
    CHECK(parse_fails({{"name", "delete_snapshot"}, {"arguments", {{"context_id", a_context}}}})
              .find("unknown argument \"context_id\"") != std::string::npos);
    CHECK(parse_fails({{"name", "list_snapshots"}, {"arguments", {{"all", true}}}})
              .find("unknown argument \"all\"") != std::string::npos);
    // The session's own contexts are never paused: there is no default to pause.
    CHECK(parse_fails({{"name", "pause_context"}, {"arguments", {{"language", "python"}}}})
              .find("unknown argument \"language\"") != std::string::npos);
    CHECK(parse_fails({{"name", "fork_context"}, {"arguments", {{"language", "cobol"}}}})
              .find("\"language\"") != std::string::npos);
}

TEST_CASE("snapshot, fork, pause and resume results: /v1's refusals become tool errors") {
    // As interpreter_api answers them (its error_response bodies).
    const auto refused = [](const char* tool, int status, const char* message) {
        auto r = operation_tool_result(tool, status, {{"reason", "x"}, {"message", message}});
        CHECK(r["isError"] == true);
        return r["content"][0]["text"].get<std::string>();
    };
    // Another user's snapshot is not found, as /v1 answers it: nothing says it exists.
    CHECK(refused("restore_snapshot", 404, "Snapshot does not exist: 7c9d") ==
          "restore_snapshot failed: Snapshot does not exist: 7c9d");
    CHECK(refused("snapshot_context", 409, "the context is busy: an execution is queued") ==
          "snapshot_context failed: the context is busy: an execution is queued");
    CHECK(refused("pause_context", 409, "this context belongs to an MCP session") ==
          "pause_context failed: this context belongs to an MCP session");
    CHECK(refused("fork_context", 507, "snapshot quota") == "fork_context failed: snapshot quota");
    CHECK(refused("resume_context", 404, "Context does not exist: 0b5e") ==
          "resume_context failed: Context does not exist: 0b5e");
    // A body without a message still says what happened.
    auto bare = operation_tool_result("delete_snapshot", 503, json());
    CHECK(bare["isError"] == true);
    CHECK(bare["content"][0]["text"] == "delete_snapshot failed: the server answered HTTP 503");
}

TEST_CASE("snapshot, fork, pause and resume results: the ids a model uses next, in a sentence") {
    const auto text = [](const char* tool, int status, const json& body) {
        auto r = operation_tool_result(tool, status, body);
        CHECK(r["isError"] == false);
        return r["content"][0]["text"].get<std::string>();
    };
    CHECK(text("snapshot_context", 201, {{"id", a_snapshot}, {"size", 1234}})
              .starts_with("snapshot " + a_snapshot + " saved (1234 bytes)"));
    CHECK(text("list_snapshots", 200, json::array({{{"id", a_snapshot}}}))
              .starts_with("1 snapshot(s)."));
    CHECK(text("delete_snapshot", 204, json()) == "the snapshot is deleted.");
    CHECK(text("restore_snapshot", 201, {{"id", a_context}})
              .starts_with("restored into the new context " + a_context));
    const auto forked =
        text("fork_context", 201, {{"contexts", json::array({{{"id", "a"}}, {{"id", "b"}}})}});
    CHECK(forked.starts_with("2 new context(s): a, b;"));
    CHECK(forked.find("\"contexts\"") != std::string::npos);  // the answer follows
    CHECK(text("pause_context", 200, {{"id", a_context}, {"status", "paused"}})
              .starts_with("context " + a_context + " is paused"));
    CHECK(text("resume_context", 200, {{"id", a_context}, {"resumed", {{"duration_ms", 250}}}})
              .starts_with("context " + a_context + " is live again (resumed in 250 ms)"));
    CHECK(text("resume_context", 200, {{"id", a_context}})
              .starts_with("context " + a_context + " was live"));
}

TEST_CASE("tools/call arguments: every bad form is refused with a reason") {
    CHECK(parse_fails(json::object()).find("name") != std::string::npos);
    CHECK(parse_fails({{"name", 3}}).find("name") != std::string::npos);
    CHECK(parse_fails({{"name", "rm_rf"}}).find("unknown tool") != std::string::npos);
    CHECK(parse_fails({{"name", "run_code"}, {"arguments", "print(1)"}}).find("object") !=
          std::string::npos);
    CHECK(parse_fails({{"name", "run_code"}, {"arguments", json::object()}}).find("code") !=
          std::string::npos);
    CHECK(parse_fails({{"name", "run_code"}, {"arguments", {{"code", 5}}}}).find("string") !=
          std::string::npos);
    CHECK(parse_fails({{"name", "run_code"}, {"arguments", {{"code", "x"}, {"timeout", 5}}}})
              .find("unknown argument \"timeout\"") != std::string::npos);
    for (json t : {json("5"), json(0), json(-1), json(3601), json(nullptr), json(true)})
        CHECK(parse_fails(
                  {{"name", "run_code"}, {"arguments", {{"code", "x"}, {"timeout_seconds", t}}}})
                  .find("timeout_seconds") != std::string::npos);
    tool_limits small;
    small.max_code_bytes = 4;
    CHECK(parse_fails({{"name", "run_code"}, {"arguments", {{"code", "12345"}}}}, small)
              .find("longer") != std::string::npos);
    CHECK(parse_fails({{"name", "run_code"}, {"arguments", {{"code", std::string("1\0", 2)}}}}) ==
          "run_code: \"code\" contains a NUL character, which a kernel cannot run");

    auto upload = [](json args) {
        return parse_fails({{"name", "upload_file"}, {"arguments", args}});
    };
    CHECK(upload({{"content", "x"}}).find("path") != std::string::npos);
    CHECK(upload({{"path", "a.txt"}}).find("content") != std::string::npos);
    CHECK(upload({{"path", "../etc/passwd"}, {"content", "x"}}).find("..") != std::string::npos);
    CHECK(upload({{"path", "/etc/passwd"}, {"content", "x"}}).find("relative") !=
          std::string::npos);
    CHECK(upload({{"path", "a\nb"}, {"content", "x"}}).find("control") != std::string::npos);
    CHECK(upload({{"path", "a.bin"}, {"content", "!!!"}, {"encoding", "base64"}}).find("base64") !=
          std::string::npos);
    CHECK(upload({{"path", "a.bin"}, {"content", "x"}, {"encoding", "hex"}}).find("encoding") !=
          std::string::npos);
    CHECK(upload({{"path", "a.bin"}, {"content", "x"}, {"encoding", 1}}).find("encoding") !=
          std::string::npos);
    CHECK(upload({{"path", 1}, {"content", "x"}}).find("string") != std::string::npos);
    small.max_upload_bytes = 3;
    CHECK(parse_fails(
              {{"name", "upload_file"}, {"arguments", {{"path", "a"}, {"content", "abcd"}}}}, small)
              .find("larger") != std::string::npos);

    CHECK(parse_fails({{"name", "read_file"}, {"arguments", json::object()}}).find("path") !=
          std::string::npos);
    CHECK(parse_fails({{"name", "read_file"}, {"arguments", {{"path", "a//b"}}}}).find("empty") !=
          std::string::npos);
    CHECK(parse_fails({{"name", "list_files"}, {"arguments", {{"dir", "x"}}}})
              .find("unknown argument") != std::string::npos);
    CHECK(parse_fails({{"name", "restart_context"}, {"arguments", {{"now", true}}}})
              .find("unknown argument") != std::string::npos);
}

TEST_CASE("tool content: a successful execution is one text block with its sections") {
    json e = {{"status", "ok"},
              {"execution_count", 3},
              {"stdout", "42\n"},
              {"stderr", ""},
              {"results", {{{"data", {{"text/plain", "43"}}}, {"metadata", json::object()}}}},
              {"error", nullptr}};
    auto r = execution_tool_result(e);
    CHECK(r["isError"] == false);
    REQUIRE(r["content"].size() == 1);
    const std::string text = r["content"][0]["text"];
    CHECK(r["content"][0]["type"] == "text");
    CHECK(text.find("status: ok (execution_count 3)") != std::string::npos);
    CHECK(text.find("--- stdout ---\n42\n") != std::string::npos);
    CHECK(text.find("--- result ---\n43\n") != std::string::npos);
    CHECK(text.find("stderr") == std::string::npos);
}

TEST_CASE("tool content: an error carries the whole traceback and isError") {
    json e = {{"status", "error"},
              {"stdout", ""},
              {"stderr", ""},
              {"results", json::array()},
              {"error",
               {{"name", "ZeroDivisionError"},
                {"value", "division by zero"},
                {"traceback",
                 {"Traceback (most recent call last):", "  return 1 / 0",
                  "ZeroDivisionError: division by zero"}}}}};
    auto r = execution_tool_result(e);
    CHECK(r["isError"] == true);
    const std::string text = r["content"][0]["text"];
    CHECK(text.find("--- error ---\nTraceback (most recent call last):\n  return 1 / 0\n"
                    "ZeroDivisionError: division by zero\n") != std::string::npos);
    e["error"]["traceback"] = json::array();
    CHECK(execution_tool_result(e)["content"][0]["text"].get<std::string>().find(
              "ZeroDivisionError: division by zero") != std::string::npos);
}

TEST_CASE("tool content: PNG results become image blocks, moved and odd ones are named") {
    json e = {
        {"status", "ok"},
        {"stdout", ""},
        {"stderr", ""},
        {"results",
         {{{"data", {{"image/png", "iVBOR\nw0K"}, {"text/plain", "<Figure>"}}}},
          {{"data", {{"image/png", {{"file", "callisto-outputs/x-1.png"}, {"bytes", 9000000}}}}}},
          {{"data", {{"application/vnd.custom+json", json::object()}}}}}},
        {"error", nullptr}};
    auto r = execution_tool_result(e);
    REQUIRE(r["content"].size() == 2);
    CHECK(r["content"][1] ==
          json{{"type", "image"}, {"data", "iVBORw0K"}, {"mimeType", "image/png"}});
    const std::string text = r["content"][0]["text"];
    CHECK(text.find("<Figure>") == std::string::npos);  // the image says it
    CHECK(text.find("callisto-outputs/x-1.png") != std::string::npos);
    CHECK(text.find("application/vnd.custom+json") != std::string::npos);
}

TEST_CASE("tool content: a timeout says whether the state survived") {
    json e = {{"status", "timeout"}, {"state_preserved", true}, {"results", json::array()}};
    auto kept = execution_tool_result(e);
    CHECK(kept["isError"] == true);
    CHECK(kept["content"][0]["text"].get<std::string>().find("state was kept") !=
          std::string::npos);
    e["state_preserved"] = false;
    CHECK(execution_tool_result(e)["content"][0]["text"].get<std::string>().find("restarted") !=
          std::string::npos);
}

TEST_CASE("tool content: files come back as text, image or base64 resource") {
    auto text = file_tool_result("a.csv", "x,y\n1,2\n");
    CHECK(text["content"][0] == json{{"type", "text"}, {"text", "x,y\n1,2\n"}});
    auto png = file_tool_result("plots/p.PNG", std::string("\x89PNG\r\n", 6));
    CHECK(png["content"][0]["type"] == "image");
    CHECK(png["content"][0]["mimeType"] == "image/png");
    CHECK(callisto::decode_base64(png["content"][0]["data"].get<std::string>()) ==
          std::string("\x89PNG\r\n", 6));
    const std::string bytes("\0\1\2\xff", 4);
    auto bin = file_tool_result("data dir/x.bin", bytes);
    const auto& res = bin["content"][0]["resource"];
    CHECK(bin["content"][0]["type"] == "resource");
    CHECK(res["uri"] == "callisto://workdir/data%20dir/x.bin");
    CHECK(callisto::decode_base64(res["blob"].get<std::string>()) == bytes);
    auto listing = file_list_tool_result(json{{{"path", "a.csv"}, {"type", "file"}, {"size", 12}},
                                              {{"path", "d"}, {"type", "directory"}}},
                                         true);
    const std::string l = listing["content"][0]["text"];
    CHECK(l.find("a.csv  (12 bytes)\nd/\n") == 0);
    CHECK(l.find("cut") != std::string::npos);
    CHECK(file_list_tool_result(json::array(), false)["content"][0]["text"] ==
          "(the working directory is empty)\n");
}

TEST_CASE("utf-8 check and base64 encoding") {
    CHECK(is_utf8_text("plain ascii\n"));
    CHECK(is_utf8_text("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK_FALSE(is_utf8_text(std::string("a\0b", 3)));
    CHECK_FALSE(is_utf8_text("\xc3"));              // truncated
    CHECK_FALSE(is_utf8_text("\xc0\xaf"));          // overlong
    CHECK_FALSE(is_utf8_text("\xed\xa0\x80"));      // surrogate
    CHECK_FALSE(is_utf8_text("\xf4\x90\x80\x80"));  // beyond U+10FFFF
    CHECK_FALSE(is_utf8_text("\x89PNG"));
}

// ---- dispatcher ----------------------------------------------------------------------------

TEST_CASE("dispatcher: ping, tools/list, tools/call and the errors") {
    scripted_tools tools;
    auto ask = [&](const json& msg) {
        auto m = parse_rpc_message(msg.dump());
        REQUIRE(m.kind == message_kind::request);
        std::optional<json> out;
        dispatch_request(m, tools, tool_limits{}, [&](json r) { out = std::move(r); });
        REQUIRE(out);
        CHECK((*out)["id"] == msg["id"]);
        return *out;
    };
    CHECK(ask(request("ping"))["result"] == json::object());
    CHECK(ask(request("tools/list", json::object(), "s"))["result"]["tools"].size() == 12);
    CHECK(ask(request("resources/list"))["error"]["code"] == rpc_error::method_not_found);
    CHECK(ask(request("initialize"))["error"]["code"] == rpc_error::invalid_request);
    auto unknown = ask(request("tools/call", {{"name", "nope"}}));
    CHECK(unknown["error"]["code"] == rpc_error::invalid_params);
    auto bad = ask(request("tools/call", {{"name", "run_code"}, {"arguments", {{"code", 1}}}}));
    CHECK(bad["error"]["code"] == rpc_error::invalid_params);
    CHECK(tools.calls.empty());
    auto ok =
        ask(request("tools/call", {{"name", "run_code"}, {"arguments", {{"code", "x = 1"}}}}, 9));
    REQUIRE(tools.calls.size() == 1);
    CHECK(std::get<run_code_args>(tools.calls[0]).code == "x = 1");
    CHECK(tools.call_ids == std::vector<std::string>{"9"});
    CHECK(ok["result"]["content"][0]["text"] == "called 0");
}

// ---- the HTTP transport --------------------------------------------------------------------

TEST_CASE("router: /mcp takes POST and DELETE; GET is 405 (no SSE stream)") {
    CHECK(match_route("POST", "/mcp", false).name() == "mcp");
    CHECK(match_route("DELETE", "/mcp/", false).name() == "mcp");
    for (auto method : {"GET", "PUT", "PATCH"}) {
        auto r = match_route(method, "/mcp", true);
        CHECK(r.name() == "method_not_allowed");
        CHECK(r.allow == "POST, DELETE");
    }
    CHECK(match_route("POST", "/mcp/x", false).name() == "not_found");
}

TEST_CASE("endpoint: initialize issues a session; later requests need it") {
    endpoint_fixture f;
    auto res = f.post(request("initialize",
                              {{"protocolVersion", "2025-11-25"},
                               {"capabilities", json::object()},
                               {"clientInfo", {{"name", "t"}, {"version", "1"}}}},
                              0));
    CHECK(res.result() == http::status::ok);
    CHECK(res[http::field::content_type] == "application/json");
    const std::string sid(res["Mcp-Session-Id"]);
    CHECK(is_valid_kernel_id(sid));
    CHECK(body_of(res)["result"]["protocolVersion"] == "2025-06-18");
    CHECK(body_of(res)["result"]["serverInfo"]["version"] == "9.9.9");

    CHECK(f.post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, sid).result() ==
          http::status::accepted);
    auto listed = f.post(request("tools/list"), sid);
    CHECK(listed.result() == http::status::ok);
    CHECK(body_of(listed)["result"]["tools"].size() == 12);

    auto missing = f.post(request("tools/list"));
    CHECK(missing.result() == http::status::bad_request);
    CHECK(body_of(missing)["error"]["message"].get<std::string>().find("Mcp-Session-Id") !=
          std::string::npos);
    CHECK(f.post(request("ping"), "0f1e2d3c-4b5a-4968-8776-655443322110").result() ==
          http::status::not_found);
    CHECK(f.post(request("ping"), "not-a-session").result() == http::status::not_found);
}

TEST_CASE("endpoint: another user's session id answers 404, and cannot be ended") {
    endpoint_fixture f;
    const auto sid = f.initialize(ana);
    CHECK(f.post(request("ping"), sid, bob).result() == http::status::not_found);
    CHECK(f.send(http::verb::delete_, "", sid, bob).result() == http::status::not_found);
    CHECK(f.post(request("ping"), sid, ana).result() == http::status::ok);
    const user admin{"root", true, 0};
    CHECK(f.post(request("ping"), sid, admin).result() == http::status::not_found);
}

TEST_CASE("endpoint: DELETE ends the session and closes its tools") {
    endpoint_fixture f;
    const auto sid = f.initialize();
    CHECK(f.send(http::verb::delete_, "").result() == http::status::bad_request);
    CHECK(f.send(http::verb::delete_, "", sid).result() == http::status::no_content);
    REQUIRE(f.backends.size() == 1);
    CHECK(f.backends[0]->closed == 1);
    CHECK(f.post(request("ping"), sid).result() == http::status::not_found);
    CHECK(f.send(http::verb::delete_, "", sid).result() == http::status::not_found);
}

TEST_CASE("endpoint: notifications and responses are accepted with 202 and no body") {
    endpoint_fixture f;
    const auto sid = f.initialize();
    for (json msg : {json{{"jsonrpc", "2.0"},
                          {"method", "notifications/cancelled"},
                          {"params", {{"requestId", 4}}}},
                     json{{"jsonrpc", "2.0"}, {"method", "notifications/whatever"}},
                     json{{"jsonrpc", "2.0"}, {"id", 5}, {"result", json::object()}}}) {
        auto res = f.post(msg, sid);
        CHECK(res.result() == http::status::accepted);
        CHECK(res.body().empty());
    }
}

TEST_CASE("endpoint: notifications/cancelled reaches the tools with the request's id") {
    endpoint_fixture f;
    const auto sid = f.initialize();
    f.backends[0]->hold = true;
    std::optional<http_response> pending;
    {
        http_request req{http::verb::post, "/mcp", 11};
        req.set(http::field::content_type, "application/json");
        req.set("Mcp-Session-Id", sid);
        req.body() =
            request("tools/call",
                    {{"name", "run_code"}, {"arguments", {{"code", "while True: pass"}}}}, "req-7")
                .dump();
        f.endpoint.handle(req, ana, [&](http_response r) { pending = std::move(r); });
    }
    CHECK(f.backends[0]->call_ids == std::vector<std::string>{"\"req-7\""});
    auto cancel = [&](json params) {
        return f.post(
            {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", params}}, sid);
    };
    CHECK(cancel({{"requestId", "req-7"}, {"reason", "timeout"}}).result() ==
          http::status::accepted);
    CHECK(cancel({{"requestId", 12}}).result() == http::status::accepted);
    // Malformed cancellations are ignored, like any notification we cannot act on.
    CHECK(cancel({{"requestId", json::array()}}).result() == http::status::accepted);
    CHECK(cancel(json::object()).result() == http::status::accepted);
    CHECK(f.backends[0]->cancelled == std::vector<std::string>{"\"req-7\"", "12"});
    f.backends[0]->answer_held(text_tool_result("interrupted"));
    REQUIRE(pending);
    CHECK(body_of(*pending)["id"] == "req-7");
}

TEST_CASE("endpoint: malformed bodies get 400 with a JSON-RPC error and the session lives on") {
    endpoint_fixture f;
    const auto sid = f.initialize();
    auto parse = f.send(http::verb::post, "{not json", sid);
    CHECK(parse.result() == http::status::bad_request);
    CHECK(body_of(parse)["error"]["code"] == rpc_error::parse_error);
    CHECK(body_of(parse)["id"].is_null());
    auto batch = f.send(http::verb::post, R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", sid);
    CHECK(batch.result() == http::status::bad_request);
    CHECK(body_of(batch)["error"]["code"] == rpc_error::invalid_request);
    auto version = f.send(http::verb::post, R"({"jsonrpc":"1.0","id":3,"method":"ping"})", sid);
    CHECK(body_of(version)["error"]["code"] == rpc_error::invalid_request);
    CHECK(body_of(version)["id"] == 3);
    auto nomethod = f.send(http::verb::post, R"({"jsonrpc":"2.0","id":4})", sid);
    CHECK(body_of(nomethod)["error"]["code"] == rpc_error::invalid_request);
    auto unknown = f.post(request("sampling/createMessage"), sid);
    CHECK(unknown.result() == http::status::ok);
    CHECK(body_of(unknown)["error"]["code"] == rpc_error::method_not_found);
    auto tool = f.post(request("tools/call", {{"name", "format_disk"}}), sid);
    CHECK(body_of(tool)["error"]["code"] == rpc_error::invalid_params);
    auto args = f.post(
        request("tools/call", {{"name", "read_file"}, {"arguments", {{"path", "../x"}}}}), sid);
    CHECK(body_of(args)["error"]["code"] == rpc_error::invalid_params);
    auto init = f.post(request("initialize", {{"capabilities", json::object()}}));
    CHECK(body_of(init)["error"]["code"] == rpc_error::invalid_params);
    CHECK(f.post(request("ping"), sid).result() == http::status::ok);
}

TEST_CASE("endpoint: headers are checked: content type, Accept, protocol version, Origin") {
    endpoint_fixture f;
    const auto sid = f.initialize(ana, "2025-03-26");
    const auto ping = request("ping").dump();
    CHECK(f.send(http::verb::post, ping, sid, ana, {{"Content-Type", "text/plain"}}).result() ==
          http::status::unsupported_media_type);
    CHECK(f.send(http::verb::post, ping, sid, ana,
                 {{"Content-Type", "application/json; charset=utf-8"}})
              .result() == http::status::ok);
    CHECK(f.send(http::verb::post, ping, sid, ana, {{"Accept", "text/event-stream"}}).result() ==
          http::status::not_acceptable);
    CHECK(f.send(http::verb::post, ping, sid, ana, {{"Accept", "*/*"}}).result() ==
          http::status::ok);
    CHECK(f.send(http::verb::post, ping, sid, ana, {{"MCP-Protocol-Version", "2099-01-01"}})
              .result() == http::status::bad_request);
    CHECK(f.send(http::verb::post, ping, sid, ana, {{"MCP-Protocol-Version", "2025-06-18"}})
              .result() == http::status::bad_request);  // not the session's
    CHECK(f.send(http::verb::post, ping, sid, ana, {{"MCP-Protocol-Version", "2025-03-26"}})
              .result() == http::status::ok);
    CHECK(f.send(http::verb::post, ping, sid, ana, {{"Origin", "http://evil.example"}}).result() ==
          http::status::forbidden);
    CHECK(f.send(http::verb::post, ping, sid, ana, {{"Origin", "null"}}).result() ==
          http::status::forbidden);
    CHECK(
        f.send(http::verb::post, ping, sid, ana, {{"Origin", "http://127.0.0.1:8888"}}).result() ==
        http::status::ok);
}

TEST_CASE("endpoint: sessions per user are limited; 401 carries a bearer challenge") {
    endpoint_fixture f;  // limit 2
    f.initialize(ana);
    const auto second = f.initialize(ana);
    auto third = f.post(request("initialize", {{"protocolVersion", "2025-06-18"}}, 0));
    CHECK(third.result() == http::status::too_many_requests);
    CHECK(body_of(third)["error"]["message"].get<std::string>().find("limit") != std::string::npos);
    f.initialize(bob);  // others are not affected
    CHECK(f.send(http::verb::delete_, "", second).result() == http::status::no_content);
    f.initialize(ana);
    auto res = mcp_endpoint::unauthorized();
    CHECK(res.result() == http::status::unauthorized);
    CHECK(std::string(res[http::field::www_authenticate]).starts_with("Bearer"));
}

TEST_CASE("registry: idle sessions expire and close their tools; busy ones stay") {
    endpoint_fixture f;  // timeout 600 s
    const auto idle = f.initialize();
    const auto busy = f.initialize(bob);
    f.backends[1]->hold = true;
    std::optional<http_response> pending;
    {
        http_request req{http::verb::post, "/mcp", 11};
        req.set(http::field::content_type, "application/json");
        req.set("Mcp-Session-Id", busy);
        req.body() = request("tools/call", {{"name", "list_files"}}).dump();
        f.endpoint.handle(req, bob, [&](http_response r) { pending = std::move(r); });
    }
    CHECK_FALSE(pending);
    f.clock.advance(std::chrono::seconds(599));
    CHECK(f.registry.expire_idle() == 0);
    f.clock.advance(std::chrono::seconds(2));
    CHECK(f.registry.expire_idle() == 1);
    CHECK(f.backends[0]->closed == 1);
    CHECK(f.backends[1]->closed == 0);
    CHECK(f.post(request("ping"), idle).result() == http::status::not_found);
    // The call ends; the idle time counts from then.
    f.backends[1]->answer_held(text_tool_result("done"));
    REQUIRE(pending);
    CHECK(pending->result() == http::status::ok);
    f.clock.advance(std::chrono::seconds(300));
    CHECK(f.registry.expire_idle() == 0);
    f.clock.advance(std::chrono::seconds(301));
    CHECK(f.registry.expire_idle() == 1);
    CHECK(f.backends[1]->closed == 1);
    CHECK(f.registry.size() == 0);
}

TEST_CASE("registry: close_all ends every session and refuses new ones") {
    endpoint_fixture f;
    f.initialize(ana);
    f.initialize(bob);
    f.registry.close_all();
    CHECK(f.backends[0]->closed == 1);
    CHECK(f.backends[1]->closed == 1);
    std::string error;
    CHECK_FALSE(f.registry.create(ana, "2025-06-18", error));
    CHECK_FALSE(error.empty());
}

TEST_CASE("registry: the sessions of users removed from the users file end; others stay") {
    endpoint_fixture f;
    const auto ana_session = f.initialize(ana);
    const auto bob_session = f.initialize(bob);
    f.registry.close_of_users({"bob", "nobody"});
    CHECK(f.backends[0]->closed == 0);
    CHECK(f.backends[1]->closed == 1);
    CHECK(f.registry.size() == 1);
    CHECK(f.registry.find_for(ana_session, ana));
    CHECK_FALSE(f.registry.find_for(bob_session, bob));
}
