#pragma once
// envd's polling watchers (filesystem.Filesystem/CreateWatcher, GetWatcherEvents,
// RemoveWatcher), which E2B's synchronous Python SDK uses for watch_dir where the JavaScript
// one streams WatchDir: each watcher's events are kept here until its client polls for them.
// A watcher belongs to one sandbox, is found only with its id and that sandbox, and stops with
// it. Bounded: max_watchers per sandbox, max_events kept per watcher between two polls (past
// it the oldest go, and the next poll counts them). Thread-safe: events arrive
// on the watches' strands, polls on the HTTP threads.

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/e2b/watch_rpc.hpp"

namespace callisto::gateway::e2b {

class watcher_table {
public:
    static constexpr std::size_t max_watchers = 64;
    static constexpr std::size_t max_events = 10000;

    struct poll {
        std::vector<watch_event> events;
        std::size_t dropped = 0;  // lost to max_events since the last poll
    };

    // A new watcher of the sandbox, whose watch `stop` ends; its id, or nullopt when the
    // sandbox has max_watchers already.
    std::optional<std::string> add(const std::string& sandbox_id, std::function<void()> stop);
    // An event of the watcher (gone: ignored).
    void push(const std::string& watcher_id, watch_event e);
    // The watcher's events since the last poll; nullopt when the sandbox has no such watcher.
    std::optional<poll> take(const std::string& sandbox_id, const std::string& watcher_id);
    // Stops and forgets the watcher; false when the sandbox has no such watcher.
    bool remove(const std::string& sandbox_id, const std::string& watcher_id);
    // The sandbox is gone: its watchers stop.
    void remove_sandbox(const std::string& sandbox_id);
    std::size_t count(const std::string& sandbox_id) const;

private:
    std::size_t count_locked(const std::string& sandbox_id) const;

    struct watcher {
        std::string sandbox_id;
        std::function<void()> stop;
        std::deque<watch_event> events;
        std::size_t dropped = 0;
    };

    mutable std::mutex mutex_;
    std::map<std::string, watcher> watchers_;  // by watcher id
};

}  // namespace callisto::gateway::e2b
