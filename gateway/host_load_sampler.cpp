#include "gateway/host_load_sampler.hpp"

namespace callisto::gateway {

namespace {

constexpr auto tick_interval = std::chrono::milliseconds(100);
constexpr auto sample_interval = std::chrono::seconds(1);

}  // namespace

host_load_sampler::host_load_sampler(boost::asio::io_context& ioc, host_load& load,
                                     metrics::registry& registry,
                                     std::function<std::size_t()> running_kernels, logger log)
    : timer_(ioc),
      load_(load),
      running_kernels_(std::move(running_kernels)),
      log_(std::move(log)),
      saturated_(registry
                     .gauges("callisto_host_saturated",
                             "1 while the host is judged past its capacity and new kernels, "
                             "contexts and one-shot executions are refused 503")
                     .get()),
      cpu_pressure_(registry
                        .gauges("callisto_host_cpu_pressure_ratio",
                                "share of the last 10 s some task waited for a CPU "
                                "(/proc/pressure/cpu some avg10); -1 without PSI")
                        .get()),
      lag_(registry
               .gauges("callisto_event_loop_lag_seconds",
                       "how late the gateway's 100 ms timer fired, the worst of the last second")
               .get()),
      run_queue_(registry
                     .gauges("callisto_host_run_queue_per_cpu",
                             "tasks ready to run per CPU (/proc/loadavg), the last second's "
                             "average")
                     .get()),
      silent_kernels_(registry
                          .gauges("callisto_kernels_heartbeat_missing",
                                  "running kernels whose heartbeat is overdue now")
                          .get()) {
    registry.collected(
        "callisto_requests_shed_total",
        "new kernels, contexts and one-shot executions refused 503 because the "
        "host was past its capacity",
        metrics::metric_type::counter, {}, [&load] {
            return std::vector<metrics::sample>{{{}, static_cast<double>(load.refusals())}};
        });
}

void host_load_sampler::start() {
    due_ = clock::now() + tick_interval;
    next_sample_ = clock::now() + sample_interval;
    tick();
}

void host_load_sampler::stop() { timer_.cancel(); }

void host_load_sampler::tick() {
    timer_.expires_at(due_);
    timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        const auto now = clock::now();
        worst_lag_ = std::max(worst_lag_, now - due_);
        runnable_sum_ += read_runnable_per_cpu();
        ++runnable_readings_;
        if (now >= next_sample_) {
            sample();
            next_sample_ = now + sample_interval;
            worst_lag_ = {};
            runnable_sum_ = 0;
            runnable_readings_ = 0;
        }
        due_ = now + tick_interval;
        tick();
    });
}

void host_load_sampler::sample() {
    host_load_sample s;
    s.cpu_pressure_percent = read_cpu_pressure();
    s.runnable_per_cpu = runnable_readings_ ? runnable_sum_ / runnable_readings_ : 0;
    s.lag = std::chrono::duration_cast<std::chrono::milliseconds>(worst_lag_);
    s.running_kernels = running_kernels_();
    load_.update(s);

    const bool saturated = load_.saturated();
    saturated_.set(saturated ? 1 : 0);
    cpu_pressure_.set(s.cpu_pressure_percent ? *s.cpu_pressure_percent / 100 : -1);
    lag_.set(std::chrono::duration<double>(s.lag).count());
    run_queue_.set(s.runnable_per_cpu);
    silent_kernels_.set(static_cast<double>(std::max<std::int64_t>(0, load_.silent_kernels())));
    if (saturated != was_saturated_) {
        if (saturated)
            log_.warn(load_.reason() +
                      "; refusing new kernels, contexts and one-shot executions "
                      "(503, Retry-After) until it eases");
        else
            log_.info("the host is below its capacity again; new work is accepted");
        was_saturated_ = saturated;
    }
}

}  // namespace callisto::gateway
