#pragma once
// The server's recent activity, one sample per interval over the last hour: what the admin
// console charts (kernels in use, executions per minute) with no time-series store of its own
// to run. Thread-safe; the samples are handed in, so it is unit-tested without a clock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include <nlohmann/json.hpp>

namespace callisto::gateway::admin {

struct activity_sample {
    std::chrono::system_clock::time_point at;
    std::size_t kernels = 0;  // registered: in use, starting or kept (the warm pool's apart)
    std::size_t busy = 0;     // of those, running code
    std::uint64_t executions_total = 0;  // finished executions since start, every API
};

class activity_history {
public:
    // Keeps the latest `capacity` samples; `interval` is what the sampler was told.
    activity_history(std::chrono::seconds interval, std::size_t capacity);

    void add(const activity_sample& sample);
    std::chrono::seconds interval() const { return interval_; }

    // {"interval_seconds": N, "samples": [{"t", "kernels", "busy", "executions_total"}]},
    // oldest first.
    nlohmann::json to_json() const;

private:
    const std::chrono::seconds interval_;
    const std::size_t capacity_;
    mutable std::mutex mutex_;
    std::deque<activity_sample> samples_;
};

}  // namespace callisto::gateway::admin
