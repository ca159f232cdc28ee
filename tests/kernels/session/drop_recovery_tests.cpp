#include "gateway/kernels/session/drop_recovery.hpp"

#include <doctest/doctest.h>

using callisto::gateway::kernels::drop_recovery;
using callisto::kernelproto::channel;

namespace {

const std::vector<drop_recovery::request> in_flight = {{"on-shell", channel::shell},
                                                       {"on-control", channel::control}};

}  // namespace

TEST_CASE("a drop on shell sends a barrier on shell; its reply proves the earlier replies lost") {
    drop_recovery d;
    CHECK_FALSE(d.active());
    auto barriers = d.dropped(channel::shell, in_flight, {"on-shell"});
    CHECK(barriers == std::vector<channel>{channel::shell});
    d.barrier_sent(channel::shell, "b1");
    CHECK(d.is_barrier("b1"));
    CHECK_FALSE(d.is_barrier("on-shell"));
    CHECK_FALSE(d.take_verdict());
    d.barrier_status("b1");  // no iopub drop: its status is not needed, nor harmful
    d.barrier_replied("other");
    CHECK_FALSE(d.take_verdict());
    d.barrier_replied("b1");
    auto v = d.take_verdict();
    REQUIRE(v);
    CHECK(v->replies_lost == std::vector<std::string>{"on-shell"});  // not the control one
    CHECK(v->idles_lost.empty());                                    // iopub lost nothing
    CHECK_FALSE(d.active());
    CHECK_FALSE(d.take_verdict());
    CHECK(d.is_barrier("b1"));  // its late answers are still kept from clients
}

TEST_CASE("a drop on control sends its barrier on control") {
    drop_recovery d;
    CHECK(d.dropped(channel::control, in_flight, {}) == std::vector<channel>{channel::control});
    d.barrier_sent(channel::control, "c1");
    d.barrier_replied("c1");
    auto v = d.take_verdict();
    REQUIRE(v);
    CHECK(v->replies_lost == std::vector<std::string>{"on-control"});
}

TEST_CASE("a drop on iopub needs the status of a shell barrier, asked again until one comes") {
    drop_recovery d;
    CHECK(d.dropped(channel::iopub, in_flight, {"idle-1", "idle-2"}) ==
          std::vector<channel>{channel::shell});
    d.barrier_sent(channel::shell, "b1");
    CHECK_FALSE(d.needs_another_status_barrier());
    d.barrier_replied("b1");
    CHECK(d.needs_another_status_barrier());
    CHECK_FALSE(d.take_verdict());
    d.barrier_sent(channel::shell, "b2");
    d.barrier_status("b2");
    CHECK_FALSE(d.needs_another_status_barrier());
    auto v = d.take_verdict();
    REQUIRE(v);
    CHECK(v->replies_lost.empty());  // replies travel on shell, which dropped nothing
    CHECK(v->idles_lost == std::vector<std::string>{"idle-1", "idle-2"});
}

TEST_CASE("a status that never comes is given up, and the idles are judged lost as they are") {
    drop_recovery d;
    d.dropped(channel::iopub, {}, {"idle-1"});
    d.barrier_sent(channel::shell, "b1");
    d.barrier_replied("b1");
    d.stop_waiting_for_status();
    auto v = d.take_verdict();
    REQUIRE(v);
    CHECK(v->idles_lost == std::vector<std::string>{"idle-1"});
}

TEST_CASE("a second drop replaces the barriers of the first, which prove nothing since") {
    drop_recovery d;
    d.dropped(channel::shell, {{"early", channel::shell}}, {});
    d.barrier_sent(channel::shell, "b1");
    auto barriers = d.dropped(channel::control, in_flight, {});
    CHECK(barriers == std::vector<channel>{channel::shell, channel::control});
    d.barrier_sent(channel::shell, "b2");
    d.barrier_sent(channel::control, "c2");
    d.barrier_replied("b1");
    d.barrier_replied("c2");
    CHECK_FALSE(d.take_verdict());
    d.barrier_replied("b2");
    auto v = d.take_verdict();
    REQUIRE(v);
    CHECK(v->replies_lost == std::vector<std::string>{"on-shell", "on-control"});
    CHECK(d.is_barrier("b1"));
}

TEST_CASE("a drop on stdin needs no barrier and finds no reply lost") {
    drop_recovery d;
    CHECK(d.dropped(channel::stdin_, in_flight, {"idle"}).empty());
    auto v = d.take_verdict();
    REQUIRE(v);
    CHECK(v->replies_lost.empty());
    CHECK(v->idles_lost.empty());
    CHECK_FALSE(d.is_barrier(""));
}

TEST_CASE("a new process forgets the drop") {
    drop_recovery d;
    d.dropped(channel::shell, in_flight, {});
    d.barrier_sent(channel::shell, "b1");
    d.reset();
    CHECK_FALSE(d.active());
    CHECK_FALSE(d.is_barrier("b1"));
    d.barrier_replied("b1");
    CHECK_FALSE(d.take_verdict());
}
