#pragma once
// A link_events that records everything the reactor reports, for tests to wait on.

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "transport/link_events.hpp"

namespace callisto::transport::testing {

struct recorded_events {
    std::vector<std::pair<kernelproto::channel, kernelproto::message>> messages;
    int connected = 0;
    std::vector<bool> heartbeats;
    std::vector<std::pair<kernelproto::channel, std::error_code>> bad;
    std::vector<kernelproto::channel> dropped;  // on_message_dropped, in order
    std::set<std::thread::id> threads;  // every call should come from the one reactor thread
    // on_open's id (0: not called), and how many reports had come before it (should be none).
    link_id opened_as = 0;
    std::size_t reports_before_open = 0;

    // Counted as they come: a waiting test asks after every message, and a scan of them all
    // each time made a 20,000-message burst quadratic (100 s of CPU under ThreadSanitizer,
    // with the reactor waiting on the recorder's lock meanwhile).
    std::map<std::tuple<kernelproto::channel, std::string, std::string>, int> counts;

    void add(kernelproto::channel ch, kernelproto::message msg) {
        ++counts[{ch, msg.msg_type, std::string()}];
        if (!msg.parent_msg_id.empty()) ++counts[{ch, msg.msg_type, msg.parent_msg_id}];
        messages.emplace_back(ch, std::move(msg));
    }

    // Messages of `type` on `ch`; with `parent`, only the replies to that request.
    int count(kernelproto::channel ch, std::string_view type, std::string_view parent = {}) const {
        auto it = counts.find({ch, std::string(type), std::string(parent)});
        return it == counts.end() ? 0 : it->second;
    }
    std::size_t total() const {
        return messages.size() + static_cast<std::size_t>(connected) + heartbeats.size() +
               bad.size() + dropped.size();
    }
};

class event_recorder : public link_events {
public:
    void on_open(link_id id) override {  // the opener's thread, not the reactor's
        std::lock_guard lock(mutex_);
        events_.opened_as = id;
        events_.reports_before_open = events_.total();
    }
    void on_message(kernelproto::channel ch, kernelproto::message msg) override {
        update([&](recorded_events& e) { e.add(ch, std::move(msg)); });
    }
    void on_connected() override {
        update([](recorded_events& e) { ++e.connected; });
    }
    void on_heartbeat(bool beating) override {
        update([&](recorded_events& e) { e.heartbeats.push_back(beating); });
    }
    void on_bad_message(kernelproto::channel ch, std::error_code ec) override {
        update([&](recorded_events& e) { e.bad.emplace_back(ch, ec); });
    }
    void on_message_dropped(kernelproto::channel ch) override {
        update([&](recorded_events& e) { e.dropped.push_back(ch); });
    }

    // Waits (generously: the machine is shared) until pred(events) holds.
    template <class Pred>
    bool wait_for(Pred pred, std::chrono::seconds limit = std::chrono::seconds(30)) const {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, limit, [&] { return pred(events_); });
    }

    template <class F>
    auto with(F f) const {
        std::lock_guard lock(mutex_);
        return f(events_);
    }

    recorded_events snapshot() const {
        std::lock_guard lock(mutex_);
        return events_;
    }

private:
    template <class F>
    void update(F f) {
        {
            std::lock_guard lock(mutex_);
            events_.threads.insert(std::this_thread::get_id());
            f(events_);
        }
        cv_.notify_all();
    }

    mutable std::mutex mutex_;
    mutable std::condition_variable cv_;
    recorded_events events_;
};

}  // namespace callisto::transport::testing
