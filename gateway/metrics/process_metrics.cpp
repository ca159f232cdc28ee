#include "gateway/metrics/process_metrics.hpp"

#include <sys/resource.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace callisto::gateway {
namespace {

// Fields of /proc/self/stat after the command name (which may hold spaces and parentheses):
// field 3 is the state, so utime (14) is at index 11, stime 12, starttime 19, vsize 20, rss 21.
struct stat_fields {
    double cpu_seconds = 0;
    double start_seconds_after_boot = 0;
    double virtual_bytes = 0;
    double resident_bytes = 0;
};

stat_fields read_stat() {
    stat_fields out;
    std::ifstream in("/proc/self/stat");
    std::string line;
    if (!std::getline(in, line)) return out;
    const auto close = line.rfind(')');
    if (close == std::string::npos) return out;
    std::istringstream rest(line.substr(close + 2));
    std::vector<std::string> f;
    for (std::string v; rest >> v;) f.push_back(v);
    if (f.size() < 22) return out;
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
    out.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
    out.start_seconds_after_boot = std::stod(f[19]) / ticks;
    out.virtual_bytes = std::stod(f[20]);
    out.resident_bytes = std::stod(f[21]) * page;
    return out;
}

double boot_time() {
    std::ifstream in("/proc/stat");
    for (std::string key; in >> key;) {
        if (key == "btime") {
            double t = 0;
            in >> t;
            return t;
        }
        in.ignore(1 << 20, '\n');
    }
    return 0;
}

double open_fds() {
    std::error_code ec;
    double n = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
        ++n;
    return n > 0 ? n - 1 : 0;  // the iterator's own descriptor
}

std::vector<metrics::sample> one(double v) { return {{{}, v}}; }

}  // namespace

void register_process_metrics(metrics::registry& r) {
    using metrics::metric_type;
    r.collected("process_cpu_seconds_total", "User and system CPU time of the gateway process",
                metric_type::counter, {}, [] { return one(read_stat().cpu_seconds); });
    r.collected("process_resident_memory_bytes", "Resident memory of the gateway process",
                metric_type::gauge, {}, [] { return one(read_stat().resident_bytes); });
    r.collected("process_virtual_memory_bytes", "Virtual memory of the gateway process",
                metric_type::gauge, {}, [] { return one(read_stat().virtual_bytes); });
    r.collected("process_open_fds", "Open file descriptors of the gateway process",
                metric_type::gauge, {}, [] { return one(open_fds()); });
    r.collected("process_max_fds", "The gateway process's limit on open file descriptors",
                metric_type::gauge, {}, [] {
                    rlimit lim{};
                    ::getrlimit(RLIMIT_NOFILE, &lim);
                    return one(static_cast<double>(lim.rlim_cur));
                });
    const double started = boot_time() + read_stat().start_seconds_after_boot;
    r.collected("process_start_time_seconds", "When the gateway process started (Unix time)",
                metric_type::gauge, {}, [started] { return one(started); });
}

}  // namespace callisto::gateway
