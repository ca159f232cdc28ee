#include "gateway/egress/rate_limiter.hpp"

#include <algorithm>

namespace callisto::gateway::egress {

rate_limiter::clock::duration rate_limiter::reserve(std::size_t bytes, clock::time_point now) {
    if (rate_ == 0 || bytes == 0) return clock::duration::zero();
    using namespace std::chrono;
    // A second's worth of burst: a short request goes at once, a download at the rate.
    const auto burst = duration_cast<clock::duration>(seconds(1));
    const auto cost = duration_cast<clock::duration>(
        duration<double>(static_cast<double>(bytes) / static_cast<double>(rate_)));
    std::lock_guard lock(mutex_);
    const auto start = std::max(full_at_, now);
    full_at_ = start + cost;
    const auto wait = full_at_ - burst - now;
    return std::max(wait, clock::duration::zero());
}

}  // namespace callisto::gateway::egress
