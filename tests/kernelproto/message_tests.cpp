#include <chrono>
#include <stdexcept>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include "test_support.hpp"

#include "kernelproto/iso_time.hpp"
#include "kernelproto/message.hpp"

namespace kp = callisto::kernelproto;
using nlohmann::json;

TEST_CASE("make_message builds a jupyter_client style header") {
    const auto before = std::chrono::system_clock::now() - std::chrono::seconds(1);
    const auto msg = kp::make_message("execute_request", {{"code", "1+1"}}, "sess-1", "alice");
    const json header = json::parse(msg.header);
    CHECK(header["msg_type"] == "execute_request");
    CHECK(header["msg_id"] == msg.msg_id);
    CHECK(header["session"] == "sess-1");
    CHECK(header["username"] == "alice");
    CHECK(header["version"] == "5.3");
    const auto date = kp::parse_iso_time(header["date"].get<std::string>());
    REQUIRE(date);
    CHECK(*date >= before);
    CHECK(msg.msg_id.size() == 36);
    CHECK(msg.msg_type == "execute_request");
    CHECK(msg.session == "sess-1");
    CHECK(msg.parent_header == "{}");
    CHECK(msg.parent_msg_id.empty());
    CHECK(msg.metadata == "{}");
    CHECK(json::parse(msg.content) == json{{"code", "1+1"}});
}

TEST_CASE("make_message copies the parent's raw header") {
    const auto parent = kp::make_message("execute_request", json::object(), "client");
    const auto reply =
        kp::make_message("execute_reply", {{"status", "ok"}}, "server", "callisto", &parent);
    CHECK(reply.parent_header == parent.header);
    CHECK(reply.parent_msg_id == parent.msg_id);
    CHECK(reply.msg_id != parent.msg_id);
}

TEST_CASE("make_message treats null content as an empty object and rejects non-objects") {
    CHECK(kp::make_message("kernel_info_request", nullptr, "s").content == "{}");
    CHECK_THROWS_AS(kp::make_message("x", json::array(), "s"), std::invalid_argument);
}

TEST_CASE("parse_routing_fields reads ids from header and parent") {
    kp::message msg;
    msg.header = R"({"msg_id":"m1","msg_type":"status","session":"s1"})";
    msg.parent_header = R"({"msg_id":"p1"})";
    REQUIRE(kp::parse_routing_fields(msg));
    CHECK(msg.msg_id == "m1");
    CHECK(msg.msg_type == "status");
    CHECK(msg.session == "s1");
    CHECK(msg.parent_msg_id == "p1");
}

TEST_CASE("parse_routing_fields rejects headers without string msg_id and msg_type") {
    kp::message msg;
    for (const char* header : {R"({"msg_type":"status"})", R"({"msg_id":"m"})",
                               R"({"msg_id":1,"msg_type":"status"})", R"([1])", "nope"}) {
        CAPTURE(header);
        msg.header = header;
        CHECK_FALSE(kp::parse_routing_fields(msg));
    }
    msg.header = R"({"msg_id":"m","msg_type":"t"})";
    msg.parent_header = "[]";
    CHECK_FALSE(kp::parse_routing_fields(msg));
}

TEST_CASE("is_json_object accepts objects only") {
    CHECK(kp::is_json_object("{}"));
    CHECK(kp::is_json_object(" \n{\"a\": [1, 2]} "));
    CHECK_FALSE(kp::is_json_object(""));
    CHECK_FALSE(kp::is_json_object("[]"));
    CHECK_FALSE(kp::is_json_object("\"{}\""));
    CHECK_FALSE(kp::is_json_object("{} {}"));
    CHECK_FALSE(kp::is_json_object("{"));
    CHECK_FALSE(kp::is_json_object("{\"a\":\"\xff\"}"));
}
