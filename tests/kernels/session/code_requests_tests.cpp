// Which client messages make a kernel run code, and what the audit log is told they run.

#include "gateway/kernels/session/code_requests.hpp"

#include <doctest/doctest.h>

using namespace callisto::gateway::kernels;
using callisto::kernelproto::channel;
using nlohmann::json;

TEST_CASE("an execute_request on the shell runs its code and its user_expressions") {
    auto v = classify_code_request(
        channel::shell, "execute_request",
        {{"code", "x = 1"}, {"user_expressions", {{"leak", "open('/etc/hostname').read()"}}}});
    REQUIRE(v.runs);
    CHECK(v.refused.empty());
    CHECK(v.runs->kind == "execute_request");
    CHECK(v.runs->code == "x = 1");
    CHECK(v.runs->user_expressions == json{{"leak", "open('/etc/hostname').read()"}});
}

TEST_CASE("an execute_request without user_expressions records none") {
    for (const json& content :
         {json{{"code", "1"}}, json{{"code", "1"}, {"user_expressions", json::object()}},
          json{{"code", "1"}, {"user_expressions", nullptr}}}) {
        auto v = classify_code_request(channel::shell, "execute_request", content);
        REQUIRE(v.runs);
        CHECK(v.runs->user_expressions.is_null());
    }
}

TEST_CASE("user_expressions of another type are recorded as sent: the kernel decides") {
    auto v = classify_code_request(channel::shell, "execute_request",
                                   {{"code", "1"}, {"user_expressions", json::array({"x"})}});
    REQUIRE(v.runs);
    CHECK(v.runs->user_expressions == json::array({"x"}));
}

TEST_CASE("code that is not a string is recorded as the JSON the client sent") {
    auto v = classify_code_request(channel::shell, "execute_request", {{"code", 42}});
    REQUIRE(v.runs);
    CHECK(v.runs->code == "42");
    auto none = classify_code_request(channel::shell, "execute_request", json());
    REQUIRE(none.runs);
    CHECK(none.runs->code == "");
}

TEST_CASE("an execute_request whose code holds a NUL is refused: ipykernel would never reply") {
    for (const std::string& code : {std::string("print(1)\0", 9), std::string(1, '\0')}) {
        auto v = classify_code_request(channel::shell, "execute_request", {{"code", code}});
        CHECK_FALSE(v.runs);
        CHECK(v.refused == "'code' contains a NUL character, which the kernel cannot run");
    }
    auto escaped =
        classify_code_request(channel::shell, "execute_request", {{"code", "print('\\x00')"}});
    CHECK(escaped.runs);
}

TEST_CASE("an execute_request on any channel but the shell is refused") {
    for (auto ch : {channel::control, channel::stdin_, channel::iopub}) {
        auto v = classify_code_request(ch, "execute_request", {{"code", "import os"}});
        CHECK_FALSE(v.runs);
        CHECK(v.refused == "execute_request is accepted on the shell channel only");
    }
}

TEST_CASE("a debugger's evaluate, setExpression and setVariable run code") {
    auto evaluate = classify_code_request(
        channel::control, "debug_request",
        {{"command", "evaluate"}, {"seq", 7}, {"arguments", {{"expression", "os.system('id')"}}}});
    REQUIRE(evaluate.runs);
    CHECK(evaluate.runs->kind == "debug_request evaluate");
    CHECK(evaluate.runs->code == "os.system('id')");

    auto set_expression = classify_code_request(
        channel::control, "debug_request",
        {{"command", "setExpression"}, {"arguments", {{"expression", "a.b"}, {"value", "f()"}}}});
    REQUIRE(set_expression.runs);
    CHECK(set_expression.runs->code == "a.b = f()");

    auto set_variable = classify_code_request(
        channel::control, "debug_request",
        {{"command", "setVariable"}, {"arguments", {{"name", "x"}, {"value", "g()"}}}});
    REQUIRE(set_variable.runs);
    CHECK(set_variable.runs->kind == "debug_request setVariable");
    CHECK(set_variable.runs->code == "x = g()");
}

TEST_CASE("a debug_request evaluating something other than a string is still recorded") {
    auto v = classify_code_request(channel::control, "debug_request",
                                   {{"command", "evaluate"}, {"arguments", {{"expression", 1}}}});
    REQUIRE(v.runs);
    CHECK(v.runs->code == "1");
    auto no_arguments =
        classify_code_request(channel::control, "debug_request", {{"command", "evaluate"}});
    REQUIRE(no_arguments.runs);
    CHECK(no_arguments.runs->code == "");
}

TEST_CASE("other debugger commands and other messages run no code") {
    for (const char* command :
         {"initialize", "attach", "dumpCell", "setBreakpoints", "stackTrace", "variables",
          "continue", "inspectVariables", "richInspectVariables", "debugInfo"}) {
        auto v = classify_code_request(channel::control, "debug_request", {{"command", command}});
        CHECK_FALSE(v.runs);
        CHECK(v.refused.empty());
    }
    CHECK_FALSE(classify_code_request(channel::shell, "kernel_info_request", json()).runs);
    CHECK_FALSE(classify_code_request(channel::control, "debug_request", json::array()).runs);
    CHECK_FALSE(classify_code_request(channel::control, "debug_request", "evaluate").runs);
    CHECK(may_run_code("execute_request"));
    CHECK(may_run_code("debug_request"));
    CHECK_FALSE(may_run_code("complete_request"));
}
