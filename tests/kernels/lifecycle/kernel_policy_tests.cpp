// The reuse/fresh policy's pure parts: the recycling limits and the keep of reset kernels (the
// flags that set them are tested in tests/gateway/server_config_tests.cpp).

#include <doctest/doctest.h>

#include "gateway/kernels/lifecycle/kernel_keep.hpp"
#include "gateway/kernels/lifecycle/kernel_policy.hpp"

using namespace callisto::gateway::kernels;
using namespace std::chrono_literals;

namespace {
const auto t0 = std::chrono::system_clock::time_point{} + 1000h;

kept_kernel kept(std::string id, std::string owner, std::string spec = "python3") {
    return {std::move(id), std::move(owner), std::move(spec), 1, t0, t0};
}
}  // namespace

TEST_CASE("policy names parse both ways and nothing else") {
    CHECK(parse_kernel_policy("reuse") == kernel_policy::reuse);
    CHECK(parse_kernel_policy("fresh") == kernel_policy::fresh);
    for (auto bad : {"", "Reuse", "FRESH", "new", "reuse "}) CHECK_FALSE(parse_kernel_policy(bad));
    CHECK(to_string(kernel_policy::reuse) == "reuse");
    CHECK(to_string(kernel_policy::fresh) == "fresh");
}

TEST_CASE("recycling limits: uses and age, each checked at the boundary, 0 meaning none") {
    const recycling_limits limits{3, 60s};
    CHECK(may_reuse(0, t0, t0, limits));
    CHECK(may_reuse(2, t0, t0 + 59s, limits));
    CHECK_FALSE(may_reuse(3, t0, t0, limits));        // served its max_uses
    CHECK_FALSE(may_reuse(1, t0, t0 + 60s, limits));  // as old as max_lifetime
    CHECK(may_reuse(1000000, t0, t0 + 10000h, recycling_limits{0, 0s}));
    CHECK_FALSE(may_reuse(5, t0, t0, recycling_limits{5, 0s}));
    CHECK_FALSE(may_reuse(0, t0, t0 + 1h, recycling_limits{0, 3600s}));
}

TEST_CASE("kernel keep hands a kernel back only to its owner, for its kernelspec, newest first") {
    kernel_keep keep(2);
    CHECK(keep.put(kept("k1", "ana")));
    CHECK(keep.put(kept("k2", "ana")));
    CHECK(keep.put(kept("k3", "bob", "other")));
    CHECK_FALSE(keep.take("bob", "python3"));  // never another user's kernel
    CHECK_FALSE(keep.take("ana", "other"));
    auto a = keep.take("ana", "python3");
    REQUIRE(a);
    CHECK(a->id == "k2");
    CHECK(keep.take("ana", "python3")->id == "k1");
    CHECK_FALSE(keep.take("ana", "python3"));
    CHECK(keep.take("bob", "other")->id == "k3");
    CHECK(keep.size() == 0);
}

TEST_CASE("kernel keep hands out a resetting kernel only once it is ready, but lets it give way") {
    kernel_keep keep(2);
    auto k = kept("k1", "ana");
    k.ready = false;
    CHECK(keep.put(k));
    CHECK_FALSE(keep.take("ana", "python3"));  // its reset has not answered
    CHECK(keep.mark_ready("k1"));
    CHECK(keep.take("ana", "python3")->id == "k1");
    k.id = "k2";
    CHECK(keep.put(k));
    CHECK(keep.evict("ana")->id == "k2");  // a limit may take it while it resets
    CHECK_FALSE(keep.mark_ready("k2"));    // then the reset's end finds it gone
}

TEST_CASE("kernel keep is bounded per owner and refuses a kernel it already holds") {
    kernel_keep keep(1);
    CHECK(keep.put(kept("k1", "ana")));
    CHECK_FALSE(keep.put(kept("k2", "ana")));  // full for ana: the caller shuts k2 down
    CHECK(keep.put(kept("k3", "bob")));
    CHECK_FALSE(keep.put(kept("k3", "bob")));
    kernel_keep none(0);
    CHECK_FALSE(none.put(kept("k1", "ana")));
    CHECK(none.size() == 0);
}

TEST_CASE("kernel keep gives way: the owner's oldest first, or anyone's; forgets gone kernels") {
    kernel_keep keep(3);
    keep.put(kept("a1", "ana"));
    keep.put(kept("b1", "bob"));
    keep.put(kept("a2", "ana"));
    CHECK(keep.count("ana") == 2);
    CHECK(keep.count("carl") == 0);
    CHECK(keep.evict("ana")->id == "a1");
    CHECK_FALSE(keep.evict("carl"));
    CHECK(keep.evict()->id == "b1");
    CHECK(keep.contains("a2"));
    keep.forget("a2");
    CHECK_FALSE(keep.contains("a2"));
    keep.forget("never-there");
    CHECK_FALSE(keep.evict());
}
