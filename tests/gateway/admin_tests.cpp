#include "gateway/admin/activity_history.hpp"

#include <doctest/doctest.h>

using namespace callisto::gateway::admin;
using namespace std::chrono_literals;

TEST_CASE("activity history keeps the latest samples, oldest first, with its interval") {
    activity_history history(10s, 3);
    auto empty = history.to_json();
    CHECK(empty["interval_seconds"] == 10);
    CHECK(empty["samples"].empty());
    const auto t0 = std::chrono::system_clock::time_point{} + std::chrono::hours(490000);
    for (std::uint64_t i = 0; i < 5; ++i)
        history.add({t0 + i * 10s, static_cast<std::size_t>(i), i / 2, 100 * i});
    auto samples = history.to_json()["samples"];
    REQUIRE(samples.size() == 3);  // the first two gave way
    CHECK(samples[0]["kernels"] == 2);
    CHECK(samples[0]["busy"] == 1);
    CHECK(samples[0]["executions_total"] == 200);
    CHECK(samples[2]["kernels"] == 4);
    CHECK(samples[2]["executions_total"] == 400);
    CHECK(samples[0]["t"] < samples[2]["t"]);
}

TEST_CASE("activity history with no room keeps nothing") {
    activity_history history(10s, 0);
    history.add({});
    CHECK(history.to_json()["samples"].empty());
}
