#include "gateway/kernels/lifecycle/kernel_metrics.hpp"

namespace callisto::gateway::kernels {
namespace {

// Seconds, from a fast local call to a long computation.
std::vector<double> duration_buckets() {
    return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
}

}  // namespace

kernel_metrics::kernel_metrics(metrics::registry& r)
    : starts(r.counters("callisto_kernel_starts_total",
                        "Kernel processes that started and answered, restarts included",
                        {"kernelspec"})),
      start_failures(r.counters("callisto_kernel_start_failures_total",
                                "Kernel processes that failed to start or to answer in time",
                                {"kernelspec"})),
      start_seconds(r.histograms("callisto_kernel_start_seconds",
                                 "From spawning a kernel process to its first reply",
                                 {"kernelspec"}, metrics::exponential_buckets(0.05, 2, 11))),
      restarts(r.counters("callisto_kernel_restarts_total",
                          "Kernel restarts: asked for (requested), a kept kernel renewed for "
                          "its owner's next context (reset), or automatic after an OOM kill "
                          "(oom), a frozen kernel killed (unresponsive) or another death (crash)",
                          {"reason"})),
      deaths(r.counters("callisto_kernel_deaths_total",
                        "Kernel processes that exited without being asked to, by cause",
                        {"cause"})),
      culls(r.counters("callisto_kernel_culls_total", "Kernels shut down by a culling rule",
                       {"rule"})),
      pool_claims(r.counters("callisto_pool_claims_total",
                             "Kernel creates that could use the warm pool: hit (a pre-started "
                             "kernel) or miss (the pool was empty)",
                             {"kernelspec", "result"})),
      claim_seconds(r.histograms("callisto_kernel_claim_seconds",
                                 "From a kernel create to the kernel answering, by source",
                                 {"source"}, metrics::exponential_buckets(0.001, 4, 9))),
      reuse_claims(r.counters("callisto_kernel_reuse_claims_total",
                              "Contexts looking for a kept kernel of their owner (reuse policy)",
                              {"result"})),
      policy_resets(r.counters("callisto_kernel_policy_resets_total",
                               "Kept kernels whose reset finished: ready for reuse, or gave way",
                               {"result"})),
      truncations(r.counters("callisto_output_truncations_total",
                             "Executions whose output was cut by a cap, by API and output kind",
                             {"api", "kind"})),
      relayed_to_clients(r.histograms("callisto_relay_kernel_message_bytes",
                                      "Size of each kernel message relayed to clients", {},
                                      metrics::exponential_buckets(64, 4, 12))
                             .get()),
      relayed_to_kernel(r.histograms("callisto_relay_client_message_bytes",
                                     "Size of each client message sent to a kernel", {},
                                     metrics::exponential_buckets(64, 4, 12))
                            .get()),
      executions(r.counters("callisto_executions_total", "Finished executions by API and status",
                            {"api", "status"})),
      execution_seconds(r.histograms("callisto_execution_seconds",
                                     "Execution time, from reaching the kernel to its reply",
                                     {"api"}, duration_buckets())),
      queue_wait_seconds(r.histograms("callisto_execution_queue_wait_seconds",
                                      "Time an execution waited in its context's queue", {"api"},
                                      duration_buckets())),
      snapshot_operations(r.counters("callisto_snapshot_operations_total",
                                     "Snapshots of contexts taken (snapshot), restored into a new "
                                     "context (restore) and forks made (fork), that succeeded",
                                     {"operation"})),
      snapshot_seconds(r.histograms("callisto_snapshot_operation_seconds",
                                    "Time of a snapshot, a restore or a fork (all its copies)",
                                    {"operation"}, duration_buckets())),
      snapshot_bytes(r.histograms("callisto_snapshot_operation_bytes",
                                  "Bytes of the snapshot a snapshot, restore, fork or pause wrote "
                                  "or read",
                                  {"operation"}, metrics::exponential_buckets(4096, 4, 12))),
      context_pauses(r.counters("callisto_context_pauses_total",
                                "Contexts paused: their state saved, their kernel shut down; by "
                                "what asked (request: POST .../pause, idle: --pause-idle)",
                                {"trigger"})),
      context_pause_seconds(r.histograms("callisto_context_pause_seconds",
                                         "Time of a pause, the snapshot included", {},
                                         duration_buckets())),
      context_resumes(r.counters("callisto_context_resumes_total",
                                 "Paused contexts resumed into a fresh kernel (ok), or not "
                                 "(failed)",
                                 {"result"})),
      context_resume_seconds(r.histograms("callisto_context_resume_seconds",
                                          "Time of a resume: the snapshot checked, a kernel "
                                          "started and the state loaded",
                                          {}, duration_buckets())),
      paused_expiries(r.counters("callisto_paused_contexts_expired_total",
                                 "Paused contexts deleted with their snapshot, paused longer "
                                 "than --paused-ttl",
                                 {})) {
    // Zeros for the series a dashboard expects before anything happened.
    for (const char* reason : {"requested", "reset", "oom", "unresponsive", "crash"})
        restarts.with({reason});
    for (const char* cause : {"oom", "unresponsive", "crash"}) deaths.with({cause});
    for (const char* rule : {"idle", "busy", "lifetime"}) culls.with({rule});
    for (const char* result : {"hit", "miss"}) reuse_claims.with({result});
    for (const char* result : {"ready", "gave_way"}) policy_resets.with({result});
    for (const char* api : {"jupyter", "v1", "mcp", "e2b"})
        for (const char* status : {"ok", "error"}) executions.with({api, status});
    for (const char* op : {"snapshot", "restore", "fork"}) snapshot_operations.with({op});
    for (const char* trigger : {"request", "idle"}) context_pauses.with({trigger});
    for (const char* result : {"ok", "failed"}) context_resumes.with({result});
    context_pause_seconds.get();
    context_resume_seconds.get();
    paused_expiries.get();
    for (const char* api : {"v1", "mcp", "e2b"})
        for (const char* kind : {"stream", "rich"}) truncations.with({api, kind});
}

void kernel_metrics::known_kernelspec(const std::string& name) {
    starts.with({name});
    start_failures.with({name});
    for (const char* result : {"hit", "miss"}) pool_claims.with({name, result});
}

const char* death_cause(const launcher::exit_status& status) {
    return status.out_of_memory ? "oom" : "crash";
}

}  // namespace callisto::gateway::kernels
