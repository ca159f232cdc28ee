#pragma once
// Feeds common/host_load.hpp once a second: the CPU's pressure, the run queue (read at each
// 100 ms tick and averaged over the second), the gateway's own lag (how late each tick fired,
// the worst of the second) and how many kernels run. Logs each change of state with its reason, and
// exports the signals as metrics, so an operator sees why new work was refused.

#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/host_load.hpp"
#include "common/logger.hpp"
#include "common/metrics.hpp"

namespace callisto::gateway {

class host_load_sampler {
public:
    // `running_kernels` is asked once a second, on the event loop.
    host_load_sampler(boost::asio::io_context& ioc, host_load& load, metrics::registry& registry,
                      std::function<std::size_t()> running_kernels, logger log);

    void start();
    void stop();  // on the io_context's threads, or before they run

private:
    using clock = std::chrono::steady_clock;
    void tick();
    void sample();

    boost::asio::steady_timer timer_;
    host_load& load_;
    std::function<std::size_t()> running_kernels_;
    logger log_;
    metrics::gauge& saturated_;
    metrics::gauge& cpu_pressure_;
    metrics::gauge& lag_;
    metrics::gauge& run_queue_;
    metrics::gauge& silent_kernels_;
    clock::time_point due_;          // when the pending tick should fire
    clock::time_point next_sample_;  // when the next second's sample is taken
    clock::duration worst_lag_{};    // this second's
    double runnable_sum_ = 0;        // this second's run queue readings
    int runnable_readings_ = 0;
    bool was_saturated_ = false;
};

}  // namespace callisto::gateway
