#pragma once
// The next timer of each link (a nudge, a ping, a ping's timeout), ordered, so the reactor finds
// the nearest in O(1) and the due ones in O(log n) each, instead of visiting every link on
// every wake-up.

#include <chrono>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "transport/reactor.hpp"

namespace callisto::transport::detail {

class deadline_queue {
public:
    using time_point = std::chrono::steady_clock::time_point;

    // Sets the link's one deadline, replacing any earlier one.
    void schedule(link_id id, time_point at);
    void cancel(link_id id);

    std::optional<time_point> nearest() const;
    // Removes the links whose deadline is at or before `now` and returns them, earliest first.
    std::vector<link_id> take_due(time_point now);

    std::size_t size() const { return at_.size(); }

private:
    std::set<std::pair<time_point, link_id>> order_;
    std::unordered_map<link_id, time_point> at_;
};

}  // namespace callisto::transport::detail
