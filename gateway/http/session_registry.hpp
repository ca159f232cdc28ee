#pragma once
// Every open client connection, held weakly, so the server can close them all when it stops,
// and count them by kind for the metrics.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace callisto::gateway {

class session_registry {
public:
    // `close` is called at most once, from shutdown_all(), if the session is still alive.
    // `kind`: one of a few fixed words ("http", "kernel_websocket", ...), a metric label.
    template <class Session>
    void add(const std::shared_ptr<Session>& session, std::string kind) {
        std::weak_ptr<Session> weak = session;
        std::lock_guard lock(mutex_);
        std::erase_if(entries_, [](const entry& e) { return !e.alive(); });
        entries_.push_back({std::move(kind), [weak] { return !weak.expired(); },
                            [weak] {
                                if (auto s = weak.lock()) s->close();
                            }});
    }

    std::map<std::string, std::size_t> open_by_kind() const {
        std::map<std::string, std::size_t> out;
        std::lock_guard lock(mutex_);
        for (const auto& e : entries_)
            if (e.alive()) ++out[e.kind];
        return out;
    }

    void close_all() {
        std::vector<entry> copy;
        {
            std::lock_guard lock(mutex_);
            copy.swap(entries_);
        }
        for (auto& e : copy) e.close();  // outside the lock: close() may re-enter
    }

private:
    struct entry {
        std::string kind;
        std::function<bool()> alive;
        std::function<void()> close;
    };
    mutable std::mutex mutex_;
    std::vector<entry> entries_;
};

}  // namespace callisto::gateway
