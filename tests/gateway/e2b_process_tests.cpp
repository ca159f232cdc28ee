// envd's process.Process/Start for the E2B facade (gateway/e2b/process_rpc): the request's
// every bad form, the command line it runs through bash, and the execution's events as
// Connect's enveloped ProcessEvent stream (start, data, end, the end frame).

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "common/encoding.hpp"
#include "gateway/e2b/connect_envelope.hpp"
#include "gateway/e2b/process_rpc.hpp"

using namespace callisto;
using namespace callisto::gateway;
using namespace callisto::gateway::e2b;
using nlohmann::json;

namespace {

const interpreter::env_limits limits{};

std::optional<process_start> parse(const json& msg) {
    connect_code code = connect_code::internal;
    std::string error;
    return parse_process_start(msg.dump(), limits, code, error);
}

json message_of(const std::string& frame, bool end = false) {
    std::error_code ec;
    auto frames = decode_envelopes(frame, 1 << 20, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].end() == end);
    return json::parse(frames[0].payload);
}

}  // namespace

TEST_CASE("process Start: the SDK's /bin/bash -l -c runs its command, with envs and cwd") {
    auto p = parse({{"process",
                     {{"cmd", "/bin/bash"},
                      {"args", {"-l", "-c", "echo hi; ls"}},
                      {"envs", {{"FOO", "bar"}}},
                      {"cwd", "/home/user/sub dir"}}},
                    {"stdin", false}});
    REQUIRE(p);
    CHECK(p->script == "cd 'sub dir' || exit 1\necho hi; ls");
    REQUIRE(p->env.size() == 1);
    CHECK(p->env[0].first == "FOO");
    auto plain = parse({{"process", {{"cmd", "/bin/bash"}, {"args", {"-c", "true"}}}}});
    REQUIRE(plain);
    CHECK(plain->script == "true");
    auto home =
        parse({{"process",
                {{"cmd", "/bin/bash"}, {"args", {"-l", "-c", "pwd"}}, {"cwd", "/home/user"}}}});
    REQUIRE(home);
    CHECK(home->script == "pwd");
    // Another command line runs as its words, quoted.
    auto other = parse({{"process", {{"cmd", "ls"}, {"args", {"-l", "it's"}}}}, {"tag", "t"}});
    REQUIRE(other);
    CHECK(other->script == "exec 'ls' '-l' 'it'\\''s'");
    CHECK(shell_quote("") == "''");
}

TEST_CASE("process Start refuses every bad request with Connect's codes") {
    struct bad {
        std::string body;
        connect_code code;
    };
    for (const auto& c : std::vector<bad>{
             {"{", connect_code::invalid_argument},
             {"[]", connect_code::invalid_argument},
             {"{}", connect_code::invalid_argument},
             {R"({"process": "ls"})", connect_code::invalid_argument},
             {R"({"process": {}})", connect_code::invalid_argument},
             {R"({"process": {"cmd": ""}})", connect_code::invalid_argument},
             {R"({"process": {"cmd": 5}})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls", "args": "-l"}})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls", "args": [1]}})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls", "envs": {"PATH": "/x"}}})",
              connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls", "envs": {"A": 1}}})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls", "envs": []}})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls", "cwd": 3}})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls", "cwd": "/etc"}})", connect_code::permission_denied},
             {R"({"process": {"cmd": "ls", "cwd": "../.."}})", connect_code::permission_denied},
             {R"({"process": {"cmd": "ls"}, "stdin": "yes"})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls"}, "stdin": true})", connect_code::unimplemented},
             {R"({"process": {"cmd": "ls"}, "tag": 1})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls"}, "pty": {"size": {"cols": 80, "rows": 24}}})",
              connect_code::unimplemented},
             {R"({"process": {"cmd": "/bin/bash", "args": ["-c", "a\u0000b"]}})",
              connect_code::invalid_argument},
         }) {
        INFO(c.body);
        connect_code code = connect_code::internal;
        std::string error;
        CHECK_FALSE(parse_process_start(c.body, limits, code, error));
        CHECK(code == c.code);
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("process events: start, base64 data, then end and the end frame") {
    CHECK(message_of(start_frame(1234)) == json{{"event", {{"start", {{"pid", 1234}}}}}});
    CHECK(message_of(keepalive_frame()) == json{{"event", {{"keepalive", json::object()}}}});
    auto out = process_frames({{"type", "stdout"}, {"text", "hé\n"}});
    REQUIRE(out.size() == 1);
    CHECK(message_of(out[0])["event"]["data"]["stdout"] == encode_base64("hé\n"));
    auto err = process_frames({{"type", "stderr"}, {"text", "oops"}});
    REQUIRE(err.size() == 1);
    CHECK(message_of(err[0])["event"]["data"]["stderr"] == encode_base64("oops"));
    CHECK(process_frames({{"type", "stdout"}, {"text", ""}}).empty());
    CHECK(process_frames({{"type", "result"}}).empty());
    CHECK(process_frames({{"type", "error"}, {"name", "ShellError"}}).empty());
    CHECK(process_frames(json::array()).empty());

    auto ok = process_frames({{"type", "end"}, {"execution", {{"status", "ok"}}}});
    REQUIRE(ok.size() == 2);
    CHECK(message_of(ok[0])["event"]["end"] ==
          json{{"exitCode", 0}, {"exited", true}, {"status", "exit status 0"}});
    CHECK(message_of(ok[1], true) == json::object());
}

TEST_CASE("process exit: the shell runner's status, signals, deadlines and the rest") {
    auto status = [](const json& execution) { return exit_of(execution); };
    auto three =
        status({{"status", "error"},
                {"error", {{"name", "ShellError"}, {"value", "the script exited with status 3"}}}});
    CHECK(three.code == 3);
    CHECK(three.status == "exit status 3");
    CHECK_FALSE(three.error);
    auto killed = status(
        {{"status", "error"},
         {"error", {{"name", "ShellError"}, {"value", "the script was killed by SIGKILL"}}}});
    CHECK(killed.code == -1);
    CHECK(killed.status == "signal: kill");
    auto timeout = status({{"status", "timeout"}});
    CHECK(timeout.code == -1);
    CHECK(timeout.error);
    auto interrupted = status({{"status", "interrupted"}});
    CHECK(interrupted.code == -1);
    auto odd =
        status({{"status", "error"},
                {"error", {{"name", "ShellError"}, {"value", "the script exited with status x"}}}});
    CHECK(odd.code == -1);
    CHECK(odd.error);
    auto python = status({{"status", "error"}, {"error", {{"name", "NameError"}, {"value", "x"}}}});
    CHECK(python.code == -1);
    CHECK(*python.error == "NameError: x");
    auto end = process_frames(
        {{"type", "end"},
         {"execution",
          {{"status", "error"},
           {"error", {{"name", "ShellError"}, {"value", "the script exited with status 2"}}}}}});
    REQUIRE(end.size() == 2);
    CHECK(message_of(end[0])["event"]["end"]["exitCode"] == 2);
}

TEST_CASE("a refused stream is its end frame with Connect's error") {
    auto body = stream_error_body(connect_code::permission_denied, "no");
    CHECK(message_of(body, true) ==
          json{{"error", {{"code", "permission_denied"}, {"message", "no"}}}});
}
