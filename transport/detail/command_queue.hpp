#pragma once
// How other threads reach the reactor thread: commands in a mutex-guarded queue, and an
// eventfd that wakes the poll when the queue stops being empty.

#include <deque>
#include <memory>
#include <mutex>
#include <variant>

#include "common/unique_fd.hpp"
#include "kernelproto/channel.hpp"
#include "kernelproto/connection_info.hpp"
#include "kernelproto/message.hpp"
#include "transport/link_events.hpp"
#include "transport/reactor.hpp"

namespace callisto::transport::detail {

struct open_command {
    link_id id;
    kernelproto::connection_info info;
    std::shared_ptr<link_events> events;
    link_options options;
};
struct send_command {
    link_id id;
    kernelproto::channel ch;
    kernelproto::message msg;
};
struct close_command {
    link_id id;
};
using command = std::variant<open_command, send_command, close_command>;

class command_queue {
public:
    command_queue();  // throws std::system_error when no eventfd can be had

    // Queues a command; ignored once stop() was called.
    void push(command c);
    // Every command waiting, in order; `stopping` says whether stop() was called.
    std::deque<command> take_all(bool& stopping);
    // From now on nothing is queued, and the reactor thread wakes to see it.
    void stop();

    // Polled by the reactor thread; readable while a wake-up is pending.
    int wake_fd() const { return wake_fd_.get(); }
    // Clears the pending wake-up, after a poll saw it.
    void clear_wake();

private:
    void wake();

    unique_fd wake_fd_;
    std::mutex mutex_;  // guards commands_ and stopping_
    std::deque<command> commands_;
    bool stopping_ = false;
};

}  // namespace callisto::transport::detail
