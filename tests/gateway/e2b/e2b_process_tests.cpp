// envd's process.Process service for the E2B facade (gateway/e2b/process_rpc): each request's
// every bad form (Start, the selectors of Connect/CloseStdin, SendSignal, SendInput), and a
// command's events as Connect's enveloped ProcessEvent stream (start, data, end, the end
// frame), its end read from callisto-enter's report.

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

TEST_CASE("process Start: the SDK's /bin/bash -l -c runs as it is, with envs, cwd and stdin") {
    auto p = parse({{"process",
                     {{"cmd", "/bin/bash"},
                      {"args", {"-l", "-c", "echo hi; ls"}},
                      {"envs", {{"FOO", "bar"}}},
                      {"cwd", "/home/user/sub dir"}}},
                    {"stdin", false}});
    REQUIRE(p);
    CHECK(p->cmd == "/bin/bash");
    CHECK(p->args == std::vector<std::string>{"-l", "-c", "echo hi; ls"});
    CHECK(p->cwd == "/home/user/sub dir");
    CHECK(p->cwd_asked == "/home/user/sub dir");
    CHECK_FALSE(p->stdin_open);
    CHECK_FALSE(p->tag);
    REQUIRE(p->env.size() == 1);
    CHECK(p->env[0].first == "FOO");
    auto home = parse({{"process", {{"cmd", "pwd"}, {"cwd", "/home/user"}}}});
    REQUIRE(home);
    CHECK(home->cwd == "/home/user");
    CHECK(home->args.empty());
    auto bare = parse(
        {{"process", {{"cmd", "ls"}, {"args", {"-l", "it's"}}}}, {"tag", "t"}, {"stdin", true}});
    REQUIRE(bare);
    CHECK(bare->cwd == "/home/user");
    CHECK(bare->cwd_asked.empty());
    CHECK(bare->stdin_open);
    CHECK(bare->tag == "t");
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
             {R"({"process": {"cmd": "ls"}, "tag": 1})", connect_code::invalid_argument},
             {R"({"process": {"cmd": "ls"}, "pty": {"size": {"cols": 80, "rows": 24}}})",
              connect_code::unimplemented},
             {R"({"process": {"cmd": "/bin/bash", "args": ["-c", "a\u0000b"]}})",
              connect_code::invalid_argument},
             {R"({"process": {"cmd": "l\u0000s"}})", connect_code::invalid_argument},
         }) {
        INFO(c.body);
        connect_code code = connect_code::internal;
        std::string error;
        CHECK_FALSE(parse_process_start(c.body, limits, code, error));
        CHECK(code == c.code);
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("process selectors: a pid (number or digits) or a tag, and their bad forms") {
    connect_code code = connect_code::internal;
    std::string error;
    auto pid = parse_selector_request(R"({"process": {"pid": 42}})", code, error);
    REQUIRE(pid);
    CHECK(pid->pid == 42u);
    CHECK_FALSE(pid->tag);
    auto digits = parse_selector_request(R"({"process": {"pid": "42"}})", code, error);
    REQUIRE(digits);
    CHECK(digits->pid == 42u);
    auto tag = parse_selector_request(R"({"process": {"tag": "web"}})", code, error);
    REQUIRE(tag);
    CHECK(tag->tag == "web");
    for (const char* body :
         {"", "{", "[]", "{}", R"({"process": 1})", R"({"process": {}})",
          R"({"process": {"pid": 0}})", R"({"process": {"pid": -3}})",
          R"({"process": {"pid": 1.5}})", R"({"process": {"pid": "4x"}})",
          R"({"process": {"pid": ""}})", R"({"process": {"pid": 4294967296}})",
          R"({"process": {"pid": true}})", R"({"process": {"tag": ""}})",
          R"({"process": {"tag": 3}})", R"({"process": {"pid": 1, "tag": "a"}})"}) {
        INFO(body);
        code = connect_code::internal;
        error.clear();
        CHECK_FALSE(parse_selector_request(body, code, error));
        CHECK(code == connect_code::invalid_argument);
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("process SendSignal: SIGKILL and SIGTERM by name or number, nothing else") {
    connect_code code = connect_code::internal;
    std::string error;
    auto kill =
        parse_send_signal(R"({"process": {"pid": 7}, "signal": "SIGNAL_SIGKILL"})", code, error);
    REQUIRE(kill);
    CHECK(kill->signal == 9);
    CHECK(kill->process.pid == 7u);
    auto term = parse_send_signal(R"({"process": {"pid": 7}, "signal": 15})", code, error);
    REQUIRE(term);
    CHECK(term->signal == 15);
    for (const char* body :
         {R"({"process": {"pid": 7}})",
          R"({"process": {"pid": 7}, "signal": "SIGNAL_UNSPECIFIED"})",
          R"({"process": {"pid": 7}, "signal": "SIGNAL_SIGSTOP"})",
          R"({"process": {"pid": 7}, "signal": 2})", R"({"process": {"pid": 7}, "signal": null})",
          R"({"signal": "SIGNAL_SIGKILL"})"}) {
        INFO(body);
        code = connect_code::internal;
        CHECK_FALSE(parse_send_signal(body, code, error));
        CHECK(code == connect_code::invalid_argument);
    }
}

TEST_CASE("process SendInput: base64 stdin bytes; a pty's input and bad base64 refused") {
    connect_code code = connect_code::internal;
    std::string error;
    auto in = parse_send_input(json{{"process", {{"pid", 3}}},
                                    {"input", {{"stdin", encode_base64(std::string("a\0b\n", 4))}}}}
                                   .dump(),
                               code, error);
    REQUIRE(in);
    CHECK(in->bytes == std::string("a\0b\n", 4));
    struct bad {
        const char* body;
        connect_code code;
    };
    for (const auto& c : std::vector<bad>{
             {R"({"process": {"pid": 3}})", connect_code::invalid_argument},
             {R"({"process": {"pid": 3}, "input": "aGk="})", connect_code::invalid_argument},
             {R"({"process": {"pid": 3}, "input": {}})", connect_code::invalid_argument},
             {R"({"process": {"pid": 3}, "input": {"stdin": 5}})", connect_code::invalid_argument},
             {R"({"process": {"pid": 3}, "input": {"stdin": "%%%"}})",
              connect_code::invalid_argument},
             {R"({"process": {"pid": 3}, "input": {"pty": "aGk="}})", connect_code::unimplemented},
             {R"({"input": {"stdin": "aGk="}})", connect_code::invalid_argument},
         }) {
        INFO(c.body);
        code = connect_code::internal;
        CHECK_FALSE(parse_send_input(c.body, code, error));
        CHECK(code == c.code);
    }
}

TEST_CASE("process events: start, base64 data, then end and the end frame") {
    CHECK(message_of(start_frame(1234)) == json{{"event", {{"start", {{"pid", 1234}}}}}});
    CHECK(message_of(keepalive_frame()) == json{{"event", {{"keepalive", json::object()}}}});
    CHECK(message_of(data_frame("stdout", "hé\n"))["event"]["data"]["stdout"] ==
          encode_base64("hé\n"));
    CHECK(message_of(data_frame("stderr", std::string("\0\xff", 2)))["event"]["data"]["stderr"] ==
          encode_base64(std::string("\0\xff", 2)));
    auto ok = end_frames(exit_of_report("exit 0"));
    REQUIRE(ok.size() == 2);
    CHECK(message_of(ok[0])["event"]["end"] ==
          json{{"exitCode", 0}, {"exited", true}, {"status", "exit status 0"}});
    CHECK(message_of(ok[1], true) == json::object());
}

TEST_CASE("process exit: callisto-enter's report, its signals and a report that says nothing") {
    auto three = exit_of_report("exit 3");
    CHECK(three.code == 3);
    CHECK(three.exited);
    CHECK(three.status == "exit status 3");
    CHECK(three.error == "exit status 3");
    CHECK_FALSE(exit_of_report("exit 0").error);
    auto killed = exit_of_report("signal 9");
    CHECK(killed.code == -1);
    CHECK_FALSE(killed.exited);
    CHECK(killed.status == "signal: killed");
    CHECK(killed.error == "signal: killed");
    CHECK(exit_of_report("signal 15").status == "signal: terminated");
    for (const char* odd :
         {"", "exit", "exit x", "exit -1", "exit 3 ", "signal", "pid 4", "quit 0"}) {
        INFO(odd);
        auto e = exit_of_report(odd);
        CHECK(e.code == -1);
        CHECK_FALSE(e.exited);
        CHECK(e.error);
    }
    auto end = end_frames(exit_of_report("signal 9"));
    CHECK(message_of(end[0])["event"]["end"] == json{{"exitCode", -1},
                                                     {"exited", false},
                                                     {"status", "signal: killed"},
                                                     {"error", "signal: killed"}});
}

TEST_CASE("a refused stream is its end frame with Connect's error") {
    auto body = stream_error_body(connect_code::permission_denied, "no");
    CHECK(message_of(body, true) ==
          json{{"error", {{"code", "permission_denied"}, {"message", "no"}}}});
}
