#include "gateway/e2b/watcher_table.hpp"

#include <algorithm>

#include "kernelproto/ids.hpp"

namespace callisto::gateway::e2b {

std::optional<std::string> watcher_table::add(const std::string& sandbox_id,
                                              std::function<void()> stop) {
    std::lock_guard lock(mutex_);
    if (count_locked(sandbox_id) >= max_watchers) return std::nullopt;
    std::string id = kernelproto::new_uuid();
    watchers_.emplace(id, watcher{sandbox_id, std::move(stop), {}, 0});
    return id;
}

void watcher_table::push(const std::string& watcher_id, watch_event e) {
    std::lock_guard lock(mutex_);
    auto it = watchers_.find(watcher_id);
    if (it == watchers_.end()) return;
    auto& w = it->second;
    if (w.events.size() == max_events) {
        w.events.pop_front();
        ++w.dropped;
    }
    w.events.push_back(std::move(e));
}

std::optional<watcher_table::poll> watcher_table::take(const std::string& sandbox_id,
                                                       const std::string& watcher_id) {
    std::lock_guard lock(mutex_);
    auto it = watchers_.find(watcher_id);
    if (it == watchers_.end() || it->second.sandbox_id != sandbox_id) return std::nullopt;
    auto& w = it->second;
    poll out{{std::make_move_iterator(w.events.begin()), std::make_move_iterator(w.events.end())},
             w.dropped};
    w.events.clear();
    w.dropped = 0;
    return out;
}

bool watcher_table::remove(const std::string& sandbox_id, const std::string& watcher_id) {
    std::function<void()> stop;
    {
        std::lock_guard lock(mutex_);
        auto it = watchers_.find(watcher_id);
        if (it == watchers_.end() || it->second.sandbox_id != sandbox_id) return false;
        stop = std::move(it->second.stop);
        watchers_.erase(it);
    }
    if (stop) stop();  // outside the lock: a stopping watch may not call back into the table
    return true;
}

void watcher_table::remove_sandbox(const std::string& sandbox_id) {
    std::vector<std::function<void()>> stops;
    {
        std::lock_guard lock(mutex_);
        std::erase_if(watchers_, [&](auto& w) {
            if (w.second.sandbox_id != sandbox_id) return false;
            stops.push_back(std::move(w.second.stop));
            return true;
        });
    }
    for (auto& stop : stops)
        if (stop) stop();
}

std::size_t watcher_table::count(const std::string& sandbox_id) const {
    std::lock_guard lock(mutex_);
    return count_locked(sandbox_id);
}

std::size_t watcher_table::count_locked(const std::string& sandbox_id) const {
    return static_cast<std::size_t>(
        std::count_if(watchers_.begin(), watchers_.end(),
                      [&](const auto& w) { return w.second.sandbox_id == sandbox_id; }));
}

}  // namespace callisto::gateway::e2b
