#pragma once
// Whether the host is past its capacity, so that new work is refused before the work already
// running suffers (docs/reliability.md, "Past capacity").
//
// Judged once a second from four signals:
// - the CPU's contention: Linux's pressure stall information ("some avg10" of
//   /proc/pressure/cpu: the share of the last 10 s in which some task waited for a CPU), or,
//   without PSI, the runnable tasks per CPU of /proc/loadavg;
// - the run queue: the tasks ready to run per CPU (/proc/loadavg, the second's average), the
//   wait any new work would join;
// - the gateway's own lag: how late a timer on its event loop fires (its threads wait too);
// - the kernels' heartbeat: the share of running kernels whose heartbeat is overdue.
// The host is saturated when the CPU is contended AND it shows: a long run queue, the gateway
// late, or kernels silent. A machine merely busy is not refused anything (a build on a
// developer's machine keeps "some" near 100% with a run queue of one or two per CPU; Linux
// wakes sleeping tasks such as the gateway's loop and a kernel's heartbeat thread at once, so
// those lag only when the host is far past its capacity). It stays saturated until the
// condition has been false for a few samples in a row, so answers do not flap.
//
// Thread-safe: the sampler updates it, request handlers and kernel sessions read it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace callisto {

struct host_load_thresholds {
    double cpu_pressure_percent = 90;    // PSI "some avg10" at or above this: contended
    double runnable_per_cpu = 2;         // without PSI: contended from this run queue
    double run_queue_per_cpu = 4;        // runnable tasks per CPU: new work would wait
    std::chrono::milliseconds lag{250};  // the gateway's timer this late: suffering
    double silent_kernel_share = 0.1;    // this share of running kernels without heartbeat
    std::size_t min_silent_kernels = 2;  // ... and at least this many
    int enter_samples = 2;               // consecutive saturated samples to start refusing
    int leave_samples = 5;               // consecutive calm samples to stop
};

// One second's signals, as the sampler read them.
struct host_load_sample {
    std::optional<double> cpu_pressure_percent;  // nullopt: no PSI on this kernel
    double runnable_per_cpu = 0;
    std::chrono::milliseconds lag{0};
    std::size_t running_kernels = 0;
};

class host_load {
public:
    explicit host_load(host_load_thresholds thresholds = {}, bool enabled = true)
        : thresholds_(thresholds), enabled_(enabled) {}

    bool enabled() const { return enabled_; }
    const host_load_thresholds& thresholds() const { return thresholds_; }

    // A kernel's heartbeat went missing / came back (or its process went).
    void heartbeat_missing() { silent_kernels_.fetch_add(1, std::memory_order_relaxed); }
    void heartbeat_back() { silent_kernels_.fetch_sub(1, std::memory_order_relaxed); }
    std::int64_t silent_kernels() const { return silent_kernels_.load(std::memory_order_relaxed); }

    // The sampler's reading, once a second.
    void update(const host_load_sample& sample);

    // Refuse new work now (never when disabled).
    bool saturated() const { return enabled_ && saturated_.load(std::memory_order_relaxed); }
    // Whether the latest sample alone was over the thresholds (judged also when disabled).
    bool over_thresholds() const { return over_.load(std::memory_order_relaxed); }
    // Why it is saturated, in a sentence for a 503's message and the log ("" when it is not).
    std::string reason() const;
    // What a refusal's Retry-After says: at least the samples it takes to leave the state.
    int retry_after_seconds() const { return thresholds_.leave_samples; }

    // A request refused for it (the metric callisto_requests_shed_total).
    void count_refusal() const { refusals_.fetch_add(1, std::memory_order_relaxed); }
    std::uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

private:
    const host_load_thresholds thresholds_;
    const bool enabled_;
    std::atomic<std::int64_t> silent_kernels_{0};
    std::atomic<bool> saturated_{false};
    std::atomic<bool> over_{false};
    mutable std::atomic<std::uint64_t> refusals_{0};
    int over_run_ = 0;          // consecutive samples over (the sampler's thread only)
    int calm_run_ = 0;          // consecutive samples under
    mutable std::mutex mutex_;  // reason_
    std::string reason_;
};

// "some avg10" of /proc/pressure/cpu's text, in percent; nullopt when absent or malformed.
std::optional<double> parse_cpu_pressure(std::string_view text);
// The runnable tasks of /proc/loadavg's text ("0.5 0.4 0.3 3/456 789": 3); nullopt if not.
std::optional<double> parse_runnable_tasks(std::string_view text);
// /proc/pressure/cpu's "some avg10"; nullopt without PSI.
std::optional<double> read_cpu_pressure();
// /proc/loadavg's runnable tasks, less the reader, per online CPU (0 when unreadable).
double read_runnable_per_cpu();

}  // namespace callisto
