#include "gateway/kernels/lifecycle/culling_policy.hpp"

#include <doctest/doctest.h>

#include "gateway/kernels/lifecycle/culled_kernels.hpp"

using namespace callisto::gateway::kernels;
using namespace std::chrono_literals;

namespace {

const wall_clock::time_point t0 = wall_clock::time_point{} + 1000000s;

kernel_activity idle_since(std::chrono::seconds ago, std::size_t connections = 0) {
    return {"idle", t0 - ago, t0 - ago, t0 - ago - 10s, connections};
}

culling_policy idle_policy(std::chrono::seconds idle) {
    culling_policy p;
    p.idle_timeout = idle;
    return p;
}

}  // namespace

TEST_CASE("culling keeps everything when no rule is set") {
    culling_policy none;
    CHECK_FALSE(none.enabled());
    CHECK_FALSE(cull_reason(idle_since(100000s), t0, none));
}

TEST_CASE("an idle kernel is culled once the idle timeout has passed") {
    auto policy = idle_policy(600s);
    CHECK_FALSE(cull_reason(idle_since(599s), t0, policy));
    auto reason = cull_reason(idle_since(600s), t0, policy);
    REQUIRE(reason);
    CHECK(reason->reason.find("idle for 600 s") != std::string::npos);
    CHECK(reason->rule == "idle");
}

TEST_CASE("a connected kernel is kept unless cull_connected is set") {
    auto policy = idle_policy(60s);
    CHECK_FALSE(cull_reason(idle_since(3600s, 1), t0, policy));
    policy.cull_connected = true;
    CHECK(cull_reason(idle_since(3600s, 1), t0, policy));
}

TEST_CASE("a busy kernel is not idle; the busy timeout is its own rule") {
    kernel_activity busy{"busy", t0 - 3600s, t0 - 120s, t0 - 4000s, 0};
    auto policy = idle_policy(60s);
    CHECK_FALSE(cull_reason(busy, t0, policy));
    policy.busy_timeout = 121s;
    CHECK_FALSE(cull_reason(busy, t0, policy));
    policy.busy_timeout = 120s;
    auto reason = cull_reason(busy, t0, policy);
    REQUIRE(reason);
    CHECK(reason->reason.find("busy for 120 s") != std::string::npos);
    CHECK(reason->rule == "busy");
}

TEST_CASE("a starting kernel is never culled for idleness") {
    kernel_activity starting{"starting", t0 - 3600s, t0, t0 - 3600s, 0};
    CHECK_FALSE(cull_reason(starting, t0, idle_policy(60s)));
}

TEST_CASE("the maximum lifetime applies even to a busy, connected kernel") {
    kernel_activity busy{"busy", t0, t0, t0 - 7200s, 3};
    culling_policy policy;
    policy.max_lifetime = 7200s;
    auto reason = cull_reason(busy, t0, policy);
    REQUIRE(reason);
    CHECK(reason->reason.find("maximum lifetime") != std::string::npos);
    CHECK(reason->rule == "lifetime");
    policy.max_lifetime = 7201s;
    CHECK_FALSE(cull_reason(busy, t0, policy));
}

TEST_CASE("culled ids are remembered for the retention period only") {
    culled_kernels culled(3600s);
    culled.record("a", {t0, "idle for 600 s", "ana", "python3"}, t0);
    REQUIRE(culled.find("a", t0 + 3599s));
    CHECK(culled.find("a", t0 + 3599s)->reason == "idle for 600 s");
    CHECK(culled.find("a", t0)->owner == "ana");  // whom the 410 may be told to
    CHECK_FALSE(culled.find("a", t0 + 3600s));
    CHECK_FALSE(culled.find("b", t0));
    culled.forget("a");
    CHECK_FALSE(culled.find("a", t0));
}

TEST_CASE("the culled registry is bounded, dropping the oldest record") {
    culled_kernels culled(3600s, 2);
    culled.record("a", {t0, "x", "ana", "python3"}, t0);
    culled.record("b", {t0 + 1s, "x", "ana", "python3"}, t0 + 1s);
    culled.record("c", {t0 + 2s, "x", "bob", "python3"}, t0 + 2s);
    CHECK_FALSE(culled.find("a", t0 + 2s));
    CHECK(culled.find("b", t0 + 2s));
    CHECK(culled.find("c", t0 + 2s));
}

TEST_CASE("the latest culled kernels come newest first, within the retention, at most N") {
    culled_kernels culled(3600s);
    culled.record("a", {t0, "idle for 600 s", "ana", "python3"}, t0);
    culled.record("b", {t0 + 10s, "max age", "bob", "ir"}, t0 + 10s);
    culled.record("c", {t0 + 20s, "idle for 600 s", "ana", "python3"}, t0 + 20s);
    auto latest = culled.latest(10, t0 + 20s);
    REQUIRE(latest.size() == 3);
    CHECK(latest[0].first == "c");
    CHECK(latest[1].first == "b");
    CHECK(latest[1].second.kernelspec == "ir");
    CHECK(latest[1].second.owner == "bob");
    CHECK(latest[2].first == "a");
    CHECK(culled.latest(2, t0 + 20s).size() == 2);
    auto later = culled.latest(10, t0 + 3605s);  // a has passed its retention
    REQUIRE(later.size() == 2);
    CHECK(later[1].first == "b");
}
