#include "gateway/egress/rate_limiter.hpp"

#include <doctest/doctest.h>

using namespace callisto::gateway::egress;
using namespace std::chrono;

TEST_CASE("rate_limiter without a cap never waits") {
    rate_limiter unlimited(0);
    const auto now = rate_limiter::clock::now();
    CHECK(unlimited.reserve(1 << 30, now) == rate_limiter::clock::duration::zero());
}

TEST_CASE("rate_limiter lets a second's worth through at once, then paces at the rate") {
    rate_limiter limiter(1000);  // bytes per second
    const auto t0 = rate_limiter::clock::now();
    CHECK(limiter.reserve(1000, t0) == rate_limiter::clock::duration::zero());
    CHECK(limiter.reserve(500, t0) == milliseconds(500));
    CHECK(limiter.reserve(500, t0) == milliseconds(1000));  // callers queue behind each other
}

TEST_CASE("rate_limiter refills as time passes, up to one second's worth") {
    rate_limiter limiter(1000);
    const auto t0 = rate_limiter::clock::now();
    CHECK(limiter.reserve(1000, t0) == rate_limiter::clock::duration::zero());
    CHECK(limiter.reserve(500, t0 + milliseconds(500)) == rate_limiter::clock::duration::zero());
    // Idle for a minute: the bucket holds one second, not sixty.
    const auto later = t0 + seconds(60);
    CHECK(limiter.reserve(1000, later) == rate_limiter::clock::duration::zero());
    CHECK(limiter.reserve(1000, later) == seconds(1));
}

TEST_CASE("rate_limiter shares its rate between connections") {
    rate_limiter limiter(1000);
    const auto t0 = rate_limiter::clock::now();
    limiter.reserve(1000, t0);
    // Two connections each asking for 1000 bytes: together they get 1000 bytes a second.
    CHECK(limiter.reserve(1000, t0) == seconds(1));
    CHECK(limiter.reserve(1000, t0) == seconds(2));
}
