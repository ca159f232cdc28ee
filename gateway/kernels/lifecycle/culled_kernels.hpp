#pragma once
// Remembers culled kernel ids for a retention period, so a client asking for one gets
// 410 Gone with when and why instead of a bare 404. Thread-safe; time is passed in.

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/kernels/lifecycle/culling_policy.hpp"

namespace callisto::gateway::kernels {

struct culled_kernel {
    wall_clock::time_point culled_at;
    std::string reason;
    std::string owner;  // only they (and admins) learn that the id was culled
    std::string kernelspec;
};

class culled_kernels {
public:
    explicit culled_kernels(std::chrono::seconds retention, std::size_t max_entries = 100000)
        : retention_(retention), max_entries_(max_entries) {}

    void record(const std::string& id, culled_kernel entry, wall_clock::time_point now);
    std::optional<culled_kernel> find(const std::string& id, wall_clock::time_point now) const;
    void forget(const std::string& id);  // the id was reused by an idempotent create
    // The `limit` most recently culled within the retention period, newest first (admins).
    std::vector<std::pair<std::string, culled_kernel>> latest(std::size_t limit,
                                                              wall_clock::time_point now) const;

private:
    void prune(wall_clock::time_point now);

    std::chrono::seconds retention_;
    std::size_t max_entries_;
    mutable std::mutex mutex_;
    std::map<std::string, culled_kernel> entries_;
};

}  // namespace callisto::gateway::kernels
