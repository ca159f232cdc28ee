#include "gateway/http/connection_limiter.hpp"

#include <vector>

#include <doctest/doctest.h>

using callisto::gateway::connection_limiter;
using verdict = connection_limiter::verdict;

TEST_CASE("connection limiter admits up to the per-address cap, then refuses that address only") {
    connection_limiter limits(10, 2);
    connection_limiter::slot a1, a2, a3, b1;
    CHECK(limits.try_admit("10.0.0.1", a1) == verdict::admitted);
    CHECK(limits.try_admit("10.0.0.1", a2) == verdict::admitted);
    CHECK(limits.try_admit("10.0.0.1", a3) == verdict::address_full);
    CHECK_FALSE(a3);
    CHECK(limits.try_admit("10.0.0.2", b1) == verdict::admitted);
    CHECK(limits.open_connections() == 3);
}

TEST_CASE("connection limiter refuses past the total cap, and a slot gone frees its place") {
    connection_limiter limits(2, 0);
    std::vector<connection_limiter::slot> slots(3);
    CHECK(limits.try_admit("a", slots[0]) == verdict::admitted);
    CHECK(limits.try_admit("b", slots[1]) == verdict::admitted);
    CHECK(limits.try_admit("c", slots[2]) == verdict::server_full);
    slots[0] = {};
    CHECK(limits.open_connections() == 1);
    CHECK(limits.try_admit("c", slots[2]) == verdict::admitted);
}

TEST_CASE("connection limiter slots move with the connection and free their place once") {
    connection_limiter limits(1, 1);
    connection_limiter::slot first;
    REQUIRE(limits.try_admit("a", first) == verdict::admitted);
    connection_limiter::slot moved = std::move(first);
    CHECK(moved);
    CHECK(limits.open_connections() == 1);
    { connection_limiter::slot gone = std::move(moved); }
    CHECK(limits.open_connections() == 0);
    connection_limiter::slot again;
    CHECK(limits.try_admit("a", again) == verdict::admitted);
}

TEST_CASE("connection limiter with no caps admits everyone") {
    connection_limiter limits(0, 0);
    std::vector<connection_limiter::slot> slots(100);
    for (auto& s : slots) CHECK(limits.try_admit("same", s) == verdict::admitted);
    CHECK(limits.open_connections() == 100);
}
