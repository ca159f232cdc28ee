#include "common/host_load.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace callisto {

namespace {

std::optional<double> to_double(std::string_view text) {
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end == text.data()) return std::nullopt;
    return value;
}

std::string read_small_file(const char* path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string formatted(const char* format, double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

}  // namespace

std::optional<double> parse_cpu_pressure(std::string_view text) {
    // "some avg10=74.60 avg60=23.89 avg300=13.10 total=8082164558\nfull avg10=0.00 ..."
    if (text.substr(0, 5) != "some ") return std::nullopt;
    const auto at = text.find("avg10=");
    const auto line_end = text.find('\n');
    if (at == std::string_view::npos || (line_end != std::string_view::npos && at > line_end))
        return std::nullopt;
    auto rest = text.substr(at + 6);
    rest = rest.substr(0, rest.find(' '));
    auto v = to_double(rest);
    if (!v || *v < 0 || *v > 100) return std::nullopt;
    return v;
}

std::optional<double> parse_runnable_tasks(std::string_view text) {
    // Three load averages, then "runnable/total", then the last pid.
    std::size_t at = 0;
    for (int field = 0; field < 3; ++field) {
        at = text.find(' ', at);
        if (at == std::string_view::npos) return std::nullopt;
        ++at;
    }
    const auto slash = text.find('/', at);
    if (slash == std::string_view::npos) return std::nullopt;
    return to_double(text.substr(at, slash - at));
}

std::optional<double> read_cpu_pressure() {
    return parse_cpu_pressure(read_small_file("/proc/pressure/cpu"));
}

double read_runnable_per_cpu() {
    static const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    auto runnable = parse_runnable_tasks(read_small_file("/proc/loadavg"));
    if (!runnable) return 0;
    // The task reading the file is one of them.
    return std::max(0.0, *runnable - 1) / static_cast<double>(cpus > 0 ? cpus : 1);
}

void host_load::update(const host_load_sample& sample) {
    const auto& t = thresholds_;
    const bool contended = sample.cpu_pressure_percent
                               ? *sample.cpu_pressure_percent >= t.cpu_pressure_percent
                               : sample.runnable_per_cpu >= t.runnable_per_cpu;
    const auto silent = static_cast<std::size_t>(std::max<std::int64_t>(0, silent_kernels()));
    const bool lagging = sample.lag >= t.lag;
    const bool queued = sample.runnable_per_cpu >= t.run_queue_per_cpu;
    const bool kernels_starved =
        silent >= t.min_silent_kernels &&
        static_cast<double>(silent) >=
            t.silent_kernel_share * static_cast<double>(sample.running_kernels);
    const bool over = contended && (queued || lagging || kernels_starved);
    over_.store(over, std::memory_order_relaxed);

    std::string why;
    if (over) {
        why = "the host is past its capacity: ";
        why += sample.cpu_pressure_percent
                   ? "CPU pressure " + formatted("%.0f%%", *sample.cpu_pressure_percent)
                   : "the CPU contended";
        if (queued || !sample.cpu_pressure_percent)
            why +=
                ", " + formatted("%.1f", sample.runnable_per_cpu) + " tasks ready to run per CPU";
        if (lagging) why += ", the gateway runs " + std::to_string(sample.lag.count()) + " ms late";
        if (kernels_starved)
            why += ", " + std::to_string(silent) + " of " + std::to_string(sample.running_kernels) +
                   " kernels miss their heartbeat";
    }
    over_run_ = over ? over_run_ + 1 : 0;
    calm_run_ = over ? 0 : calm_run_ + 1;
    bool saturated = saturated_.load(std::memory_order_relaxed);
    if (!saturated && over_run_ >= t.enter_samples) saturated = true;
    if (saturated && calm_run_ >= t.leave_samples) saturated = false;

    std::lock_guard lock(mutex_);
    if (over || !saturated) reason_ = std::move(why);  // while leaving, keep the last reason
    saturated_.store(saturated, std::memory_order_relaxed);
}

std::string host_load::reason() const {
    if (!saturated()) return {};
    std::lock_guard lock(mutex_);
    return reason_;
}

}  // namespace callisto
