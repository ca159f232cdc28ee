// The reactor's timers: one deadline per link, the nearest first.

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "transport/detail/deadline_queue.hpp"

using callisto::transport::link_id;
using callisto::transport::detail::deadline_queue;
using namespace std::chrono_literals;

namespace {
const deadline_queue::time_point t0{};
}

TEST_CASE("an empty queue has no nearest deadline and nothing due") {
    deadline_queue q;
    CHECK_FALSE(q.nearest());
    CHECK(q.take_due(t0 + 1h).empty());
}

TEST_CASE("due links come out earliest first; later ones stay") {
    deadline_queue q;
    q.schedule(3, t0 + 30ms);
    q.schedule(1, t0 + 10ms);
    q.schedule(2, t0 + 20ms);
    REQUIRE(q.nearest());
    CHECK(*q.nearest() == t0 + 10ms);
    CHECK(q.take_due(t0 + 20ms) == std::vector<link_id>{1, 2});
    CHECK(q.size() == 1);
    CHECK(*q.nearest() == t0 + 30ms);
}

TEST_CASE("a link has one deadline: scheduling again replaces it") {
    deadline_queue q;
    q.schedule(1, t0 + 10ms);
    q.schedule(1, t0 + 50ms);
    CHECK(q.size() == 1);
    CHECK(q.take_due(t0 + 10ms).empty());
    CHECK(q.take_due(t0 + 50ms) == std::vector<link_id>{1});
}

TEST_CASE("links sharing a deadline are all due; a cancelled one is not") {
    deadline_queue q;
    q.schedule(1, t0 + 10ms);
    q.schedule(2, t0 + 10ms);
    q.schedule(3, t0 + 10ms);
    q.cancel(2);
    q.cancel(99);  // unknown: ignored
    CHECK(q.take_due(t0 + 10ms) == std::vector<link_id>{1, 3});
    CHECK_FALSE(q.nearest());
}
