#include "transport/detail/deadline_queue.hpp"

namespace callisto::transport::detail {

void deadline_queue::schedule(link_id id, time_point at) {
    auto [it, inserted] = at_.try_emplace(id, at);
    if (!inserted) {
        if (it->second == at) return;
        order_.erase({it->second, id});
        it->second = at;
    }
    order_.emplace(at, id);
}

void deadline_queue::cancel(link_id id) {
    auto it = at_.find(id);
    if (it == at_.end()) return;
    order_.erase({it->second, id});
    at_.erase(it);
}

std::optional<deadline_queue::time_point> deadline_queue::nearest() const {
    if (order_.empty()) return std::nullopt;
    return order_.begin()->first;
}

std::vector<link_id> deadline_queue::take_due(time_point now) {
    std::vector<link_id> due;
    while (!order_.empty() && order_.begin()->first <= now) {
        link_id id = order_.begin()->second;
        order_.erase(order_.begin());
        at_.erase(id);
        due.push_back(id);
    }
    return due;
}

}  // namespace callisto::transport::detail
