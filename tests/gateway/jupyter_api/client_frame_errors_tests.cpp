#include "gateway/jupyter_api/client_frame_errors.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace callisto;

TEST_CASE("a protocol error is an iopub error message addressed to the rejected request") {
    auto request = kernelproto::make_message("execute_request", {{"code", "1"}}, "client-session");
    auto error = gateway::jupyter_api::protocol_error_message("unknown channel 'nope'", &request);
    CHECK(error.msg_type == "error");
    CHECK(error.parent_msg_id == request.msg_id);
    auto content = nlohmann::json::parse(error.content);
    CHECK(content["ename"] == "CallistoProtocolError");
    CHECK(content["evalue"] == "unknown channel 'nope'");
    CHECK(content["traceback"].size() == 1);
}

TEST_CASE("a protocol error for an unreadable frame has an empty parent header") {
    auto error = gateway::jupyter_api::protocol_error_message("malformed JSON", nullptr);
    CHECK(error.parent_header == "{}");
    CHECK(error.parent_msg_id.empty());
}
