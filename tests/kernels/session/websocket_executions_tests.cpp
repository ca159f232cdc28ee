#include "gateway/kernels/session/websocket_executions.hpp"

#include <doctest/doctest.h>

using namespace callisto::gateway::kernels;

namespace {
websocket_execution started(std::string id) {
    websocket_execution e;
    e.msg_id = std::move(id);
    e.started_steady = std::chrono::steady_clock::now();
    return e;
}
}  // namespace

TEST_CASE("an execution is finished by its reply, with the output of its children counted") {
    websocket_executions t;
    CHECK(t.started(started("a")).empty());
    t.output("a", 10);
    t.output("other", 99);
    t.output("a", 5);
    CHECK_FALSE(t.replied("other", "ok"));
    auto e = t.replied("a", "error");
    REQUIRE(e);
    CHECK(e->status == "error");
    CHECK(e->output_bytes == 15);
    CHECK(t.pending() == 0);
    CHECK_FALSE(t.replied("a", "ok"));  // once
}

TEST_CASE("pending executions are bounded: the oldest is given up as lost") {
    websocket_executions t(2);
    t.started(started("a"));
    t.started(started("b"));
    auto lost = t.started(started("c"));
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].msg_id == "a");
    CHECK(lost[0].status == "lost");
    CHECK(t.pending() == 2);
    // A msg_id reused by a client ends the first one.
    lost = t.started(started("b"));
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].msg_id == "b");
    auto all = t.lose_all();
    CHECK(all.size() == 2);
    CHECK(t.pending() == 0);
}
