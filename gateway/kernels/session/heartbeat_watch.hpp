#pragma once
// How long a kernel has answered no heartbeat, and the moment that becomes too long.
//
// The reactor pings each connected kernel and reports when a ping goes unanswered and when
// one is answered again. ipykernel answers from a thread of its own that needs no GIL, so a
// kernel deep in a computation still answers; one that does not is frozen (SIGSTOP, a
// deadlock in native code, a host swapping it out). Past the timeout its session kills it
// and the autorestart rule decides what follows. Kernels that answer their heartbeat from
// their main loop (IRkernel) fall silent whenever they run code: their session excuses a
// silence while they are busy. A silence is also counted in the host's load (common/
// host_load.hpp): many silent kernels at once mean a starved host, not frozen kernels. Runs
// on the session's strand.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "common/host_load.hpp"

namespace callisto::gateway::kernels {

class heartbeat_watch {
public:
    using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;
    using clock = std::chrono::steady_clock;

    // `on_frozen(silent_for)` runs on the strand once the heartbeat has been missing for
    // `timeout` (0: never), if the owner given to missed() (the session the callback belongs
    // to) still lives; it is held for the call. `host` (may be null) counts silences.
    heartbeat_watch(strand_type strand, std::chrono::seconds timeout,
                    std::function<void(std::chrono::seconds)> on_frozen, host_load* host = nullptr);
    ~heartbeat_watch() { stop(); }
    heartbeat_watch(const heartbeat_watch&) = delete;
    heartbeat_watch& operator=(const heartbeat_watch&) = delete;

    // The first unanswered ping of a silence.
    void missed(std::weak_ptr<const void> owner);
    // The silence so far is excused (a kernel that answers only between executions was busy):
    // it is counted again from now, and judged a timeout later.
    void excuse();
    // The silence goes on being counted from its start, judged again a timeout later (the host
    // is starved: the kernel may be alive but not scheduled).
    void wait_longer() { arm(); }
    // A ping answered again: how long the silence lasted (nothing if there was none).
    std::optional<std::chrono::seconds> answered();
    void stop();  // the process or its link is gone: forget the silence

private:
    void arm();

    boost::asio::steady_timer timer_;
    std::chrono::seconds timeout_;
    std::function<void(std::chrono::seconds)> on_frozen_;
    host_load* host_;
    std::weak_ptr<const void> owner_;
    std::optional<clock::time_point> silent_since_;
    std::uint64_t armed_ = 0;  // which wait is current: a completed older one does nothing
};

}  // namespace callisto::gateway::kernels
