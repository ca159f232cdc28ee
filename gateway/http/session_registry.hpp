#pragma once
// Every open client connection, held weakly, so the server can close them all when it stops,
// and count them by kind for the metrics.

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace callisto::gateway {

class session_registry {
public:
    // `close` is called at most once, from close_all() or close_of_users(), if the session
    // is still alive. `kind`: one of a few fixed words ("http", "kernel_websocket", ...), a
    // metric label. `user`: whose it is, when known ("" for a connection not yet
    // authenticated, which each of its requests is).
    template <class Session>
    void add(const std::shared_ptr<Session>& session, std::string kind, std::string user = {}) {
        std::weak_ptr<Session> weak = session;
        std::lock_guard lock(mutex_);
        std::erase_if(entries_, [](const entry& e) { return !e.alive(); });
        entries_.push_back({std::move(kind), std::move(user), [weak] { return !weak.expired(); },
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

    // Closes the sessions of these users: they were removed from the users file, or their
    // token changed.
    void close_of_users(const std::set<std::string>& names) {
        std::vector<entry> gone;
        {
            std::lock_guard lock(mutex_);
            auto theirs =
                std::stable_partition(entries_.begin(), entries_.end(),
                                      [&](const entry& e) { return !names.contains(e.user); });
            std::move(theirs, entries_.end(), std::back_inserter(gone));
            entries_.erase(theirs, entries_.end());
        }
        for (auto& e : gone) e.close();
    }

private:
    struct entry {
        std::string kind;
        std::string user;
        std::function<bool()> alive;
        std::function<void()> close;
    };
    mutable std::mutex mutex_;
    std::vector<entry> entries_;
};

}  // namespace callisto::gateway
