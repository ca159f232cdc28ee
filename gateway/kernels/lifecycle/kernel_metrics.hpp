#pragma once
// What the kernels layer counts for GET /metrics: starts, failures, restarts and deaths by
// cause, culls by rule, warm pool and reuse claims, output truncations, and the sizes of the
// messages it relays. Registered once by the server; kernel sessions and the manager update
// them as things happen. Labels are kernelspec names and fixed words, never kernel ids.

#include <string>

#include "common/metrics.hpp"
#include "launcher/process/process_supervisor.hpp"

namespace callisto::gateway::kernels {

struct kernel_metrics {
    explicit kernel_metrics(metrics::registry& r);

    // Zeros for a kernelspec's series (starts, start failures, pool claims), so that a
    // dashboard or an alert sees 0 before the first event rather than no series.
    void known_kernelspec(const std::string& name);

    metrics::counter_family& starts;           // {kernelspec}: processes that became ready
    metrics::counter_family& start_failures;   // {kernelspec}
    metrics::histogram_family& start_seconds;  // {kernelspec}: spawn -> first reply
    metrics::counter_family& restarts;         // {reason}: requested, oom, crash
    metrics::counter_family& deaths;           // {cause}: oom, crash (restarted or not)
    metrics::counter_family& culls;            // {rule}: idle, busy, lifetime
    metrics::counter_family& pool_claims;      // {kernelspec, result}: hit, miss
    metrics::histogram_family&
        claim_seconds;                       // {source}: pool, fresh (a create, asked to answered)
    metrics::counter_family& reuse_claims;   // {result}: hit, miss (kept kernels, --kernel-policy)
    metrics::counter_family& policy_resets;  // {result}: ready, gave_way
    metrics::counter_family& truncations;    // {api, kind}: output cut by a cap
    metrics::histogram& relayed_to_clients;  // bytes of a kernel message relayed to clients
    metrics::histogram& relayed_to_kernel;   // bytes of a client message sent to its kernel
    // Executions of every API ("jupyter": execute_request over a kernel WebSocket; "v1", "mcp":
    // the interpreter API's), counted where each API sees them finish.
    metrics::counter_family& executions;            // {api, status}
    metrics::histogram_family& execution_seconds;   // {api}
    metrics::histogram_family& queue_wait_seconds;  // {api}: v1 and mcp queue per context
    // Snapshots of contexts (issue 37): taken, restored, forked (one per fork request),
    // counted with their time and bytes; pauses and resumes of contexts with theirs.
    metrics::counter_family& snapshot_operations;  // {operation}: snapshot, restore, fork
    metrics::histogram_family& snapshot_seconds;   // {operation}
    metrics::histogram_family& snapshot_bytes;     // {operation}: snapshot, restore, fork, pause
    metrics::counter_family& context_pauses;       // {trigger}: request, idle
    metrics::histogram_family& context_pause_seconds;
    metrics::counter_family& context_resumes;  // {result}: ok, failed
    metrics::histogram_family& context_resume_seconds;
    // Paused contexts deleted with their snapshot at --paused-ttl.
    metrics::counter_family& paused_expiries;
};

// "oom" for a kernel killed at its memory limit, else "crash".
const char* death_cause(const launcher::exit_status& status);

}  // namespace callisto::gateway::kernels
