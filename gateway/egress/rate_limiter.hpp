#pragma once
// Bytes per second for one proxy (one kernel), shared by all its connections and both
// directions: a token bucket of one second's worth. Told the time, so it is tested without
// sleeping (tests/egress/rate_limiter_tests.cpp); thread-safe, as connections run on their
// own strands.

#include <chrono>
#include <cstddef>
#include <mutex>

namespace callisto::gateway::egress {

class rate_limiter {
public:
    using clock = std::chrono::steady_clock;

    // 0: no cap.
    explicit rate_limiter(std::size_t bytes_per_second) : rate_(bytes_per_second) {}

    // Takes `bytes` from the bucket and says how long to wait before sending them (zero while
    // the bucket holds enough). The waits of concurrent callers add up: each is given its
    // own slot, so N connections share the rate rather than each getting it.
    clock::duration reserve(std::size_t bytes, clock::time_point now);

    std::size_t bytes_per_second() const { return rate_; }

private:
    std::size_t rate_;
    std::mutex mutex_;
    // When the bucket will be full again if nothing more is taken (GCRA's theoretical arrival
    // time): never earlier than now minus the burst.
    clock::time_point full_at_{};
};

}  // namespace callisto::gateway::egress
