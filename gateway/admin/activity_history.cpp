#include "gateway/admin/activity_history.hpp"

#include "kernelproto/iso_time.hpp"

namespace callisto::gateway::admin {

activity_history::activity_history(std::chrono::seconds interval, std::size_t capacity)
    : interval_(interval), capacity_(capacity) {}

void activity_history::add(const activity_sample& sample) {
    std::lock_guard lock(mutex_);
    if (capacity_ == 0) return;
    if (samples_.size() == capacity_) samples_.pop_front();
    samples_.push_back(sample);
}

nlohmann::json activity_history::to_json() const {
    nlohmann::json samples = nlohmann::json::array();
    {
        std::lock_guard lock(mutex_);
        for (const auto& s : samples_)
            samples.push_back({{"t", kernelproto::format_iso_time(s.at)},
                               {"kernels", s.kernels},
                               {"busy", s.busy},
                               {"executions_total", s.executions_total}});
    }
    return {{"interval_seconds", interval_.count()}, {"samples", std::move(samples)}};
}

}  // namespace callisto::gateway::admin
