#pragma once
// Every open client connection, held weakly, so the server can close them all when it stops.

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace callisto::gateway {

class session_registry {
public:
    // `close` is called at most once, from shutdown_all(), if the session is still alive.
    template <class Session>
    void add(const std::shared_ptr<Session>& session) {
        std::weak_ptr<Session> weak = session;
        std::lock_guard lock(mutex_);
        std::erase_if(entries_, [](const entry& e) { return !e.alive(); });
        entries_.push_back({[weak] { return !weak.expired(); },
                            [weak] {
                                if (auto s = weak.lock()) s->close();
                            }});
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
        std::function<bool()> alive;
        std::function<void()> close;
    };
    std::mutex mutex_;
    std::vector<entry> entries_;
};

}  // namespace callisto::gateway
