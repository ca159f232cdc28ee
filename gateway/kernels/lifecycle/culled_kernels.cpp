#include "gateway/kernels/lifecycle/culled_kernels.hpp"

#include <algorithm>

namespace callisto::gateway::kernels {

void culled_kernels::record(const std::string& id, culled_kernel entry,
                            wall_clock::time_point now) {
    std::lock_guard lock(mutex_);
    prune(now);
    if (entries_.size() >= max_entries_) {
        // Bounded: the oldest record makes room.
        auto oldest = std::min_element(entries_.begin(), entries_.end(), [](auto& a, auto& b) {
            return a.second.culled_at < b.second.culled_at;
        });
        entries_.erase(oldest);
    }
    entries_[id] = std::move(entry);
}

std::optional<culled_kernel> culled_kernels::find(const std::string& id,
                                                  wall_clock::time_point now) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || now - it->second.culled_at >= retention_) return std::nullopt;
    return it->second;
}

void culled_kernels::forget(const std::string& id) {
    std::lock_guard lock(mutex_);
    entries_.erase(id);
}

std::vector<std::pair<std::string, culled_kernel>> culled_kernels::latest(
    std::size_t limit, wall_clock::time_point now) const {
    std::vector<std::pair<std::string, culled_kernel>> out;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, entry] : entries_)
            if (now - entry.culled_at < retention_) out.emplace_back(id, entry);
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.second.culled_at > b.second.culled_at; });
    if (out.size() > limit) out.resize(limit);
    return out;
}

void culled_kernels::prune(wall_clock::time_point now) {
    std::erase_if(entries_,
                  [&](const auto& kv) { return now - kv.second.culled_at >= retention_; });
}

}  // namespace callisto::gateway::kernels
