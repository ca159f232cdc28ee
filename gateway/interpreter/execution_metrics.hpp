#pragma once
// Counts a /v1 or MCP execution in the metrics when it ends: its status, its time, how long it
// queued, and whether its output was cut. A sink subscribed to the execution, so every way an
// execution ends (a reply, a timeout, an interrupt, a refusal, its context closing) is counted
// once, in one place.

#include <string>

#include "gateway/interpreter/execution.hpp"
#include "gateway/kernels/lifecycle/kernel_metrics.hpp"

namespace callisto::gateway::interpreter {

execution::event_sink count_when_finished(kernels::kernel_metrics& metrics, std::string api);

}  // namespace callisto::gateway::interpreter
