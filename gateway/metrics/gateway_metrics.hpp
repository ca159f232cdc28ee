#pragma once
// The figures read at each scrape from the gateway's own registries: kernels by kernelspec and
// state, the warm pool's levels, kept kernels, open connections by kind, and the build. The
// counters and histograms that change as things happen are registered by their layers
// (kernels::kernel_metrics, request_log); the process's own by register_process_metrics.

#include "common/metrics.hpp"
#include "gateway/http/session_registry.hpp"
#include "gateway/interpreter/context_record.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/kernels/records/kernel_record_store.hpp"
#include "launcher/kernelspec/kernelspec_catalog.hpp"

namespace callisto::gateway {

void register_gateway_metrics(metrics::registry& r, const kernels::kernel_manager& kernels,
                              const launcher::kernelspec_catalog& catalog,
                              const session_registry& sessions);

// Writes to --state-dir that failed (a full disk): what a restart would not bring back.
void register_state_metrics(metrics::registry& r, const kernels::kernel_record_store& kernels,
                            const interpreter::context_record_store& contexts);

}  // namespace callisto::gateway
