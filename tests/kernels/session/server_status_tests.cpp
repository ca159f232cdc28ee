#include "gateway/kernels/session/server_status.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "gateway/kernels/output/replay_buffer.hpp"

using namespace callisto;

TEST_CASE("a server status carries the cause of a death to the executions it ends") {
    auto msg = gateway::kernels::make_server_status(
        "restarting", "s", "kernel process killed: out of memory (limit 512MiB)");
    CHECK(msg.msg_type == "status");
    CHECK(msg.parent_msg_id.empty());
    CHECK(nlohmann::json::parse(msg.content) == nlohmann::json{{"execution_state", "restarting"}});
    gateway::kernels::stamp_sequence(msg, 12);  // what every broadcast does to it on the way
    CHECK(gateway::kernels::server_status_reason(msg) ==
          "kernel process killed: out of memory (limit 512MiB)");
    CHECK(nlohmann::json::parse(msg.metadata)["callisto_seq"] == 12);
}

TEST_CASE("a server status without a cause, or with odd metadata, has no reason") {
    auto msg = gateway::kernels::make_server_status("dead", "s");
    CHECK(msg.metadata == "{}");
    CHECK(gateway::kernels::server_status_reason(msg).empty());
    msg.metadata = R"({"callisto_reason": 42})";
    CHECK(gateway::kernels::server_status_reason(msg).empty());
    msg.metadata = "not json";
    CHECK(gateway::kernels::server_status_reason(msg).empty());
}
