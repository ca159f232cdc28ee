#pragma once
// The gateway process's own figures, under the names every Prometheus client library uses
// (process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds, ...), read from
// /proc/self at each scrape.

#include "common/metrics.hpp"

namespace callisto::gateway {

void register_process_metrics(metrics::registry& r);

}  // namespace callisto::gateway
