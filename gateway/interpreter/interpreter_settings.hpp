#pragma once
// The knobs of the interpreter API, with their defaults.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "gateway/audit/audit_log.hpp"
#include "gateway/interpreter/context_record.hpp"
#include "gateway/interpreter/execution_request.hpp"
#include "gateway/interpreter/paused_context.hpp"
#include "gateway/interpreter/snapshot_store.hpp"
#include "gateway/kernels/lifecycle/kernel_metrics.hpp"
#include "gateway/kernels/lifecycle/kernel_policy.hpp"

namespace callisto::gateway::interpreter {

struct interpreter_settings {
    std::size_t queue_limit = 16;  // waiting executions per context; beyond: 429
    // The server's egress ceiling (--egress-allow): what a context's "network" may ask for.
    std::vector<std::string> egress_allow;
    std::size_t text_budget_bytes = 1 << 20;          // per stream (stdout, stderr) per execution
    std::size_t result_cap_bytes = 5 << 20;           // one MIME value; larger goes to a file
    std::size_t results_budget_bytes = 20 << 20;      // all inline results of one execution
    std::size_t finished_kept = 64;                   // finished executions remembered per context
    std::chrono::milliseconds interrupt_grace{5000};  // deadline interrupt -> restart
    execution_request_limits request_limits;
    std::size_t max_upload_bytes = 100 << 20;  // PUT .../files/{path}: its own body limit
    std::size_t max_download_bytes = 100 << 20;
    std::size_t max_listed_files = 10000;
    // The audit log's files_written: workdir entries compared before and after an execution
    // (blocking I/O on the context's strand, so kept small), and paths named.
    std::size_t audit_compared_files = 2000;
    std::size_t audit_named_files = 100;
    // One message on the events WebSocket: code (1 MiB) and env (256 KiB), JSON-escaped.
    std::size_t max_socket_message_bytes = 4 << 20;
    // Where the kernels' own workdirs are, seen from the gateway (<root>/<kernel id>, the
    // sandbox's session workdir). Empty when kernels are not sandboxed: each context then gets
    // <context_root>/<context id>, and its kernel is told to chdir there.
    std::filesystem::path kernel_workdir_root;
    std::filesystem::path context_root;
    // --snapshot-dir: where snapshots of contexts are kept (issue 37); empty until the server
    // fills it in (<state-dir>/snapshots, else the runtime root's), and then never empty.
    std::filesystem::path snapshot_dir;
    snapshot_quota snapshot_limits;  // --snapshot-quota, --snapshot-quota-bytes
    kernels::kernel_policy default_policy =
        kernels::kernel_policy::reuse;               // when a request names none
    std::chrono::seconds culled_retention{3600};     // contexts whose kernel was culled: 410
    std::chrono::milliseconds reset_timeout{10000};  // a kept kernel's reset must answer
    std::size_t oneshot_kept = 1024;                 // one-shot executions remembered, all users
    std::size_t oneshot_kept_per_user = 64;          // and of one user
    // --audit-log: every execution is recorded there, or refused when it cannot be (a
    // service the server owns, not a knob; null: no audit log).
    audit::audit_log* audit = nullptr;
    // --state-dir: each context's record, for the next gateway to bring it back (null: none).
    context_record_store* context_records = nullptr;
    // --state-dir: each paused context's record (null: paused contexts last as long as the
    // process).
    paused_record_store* paused_records = nullptr;
    // --pause-idle: a /v1 context idle this long is paused (0: never).
    std::chrono::seconds pause_idle{0};
    // --paused-ttl: a context paused this long is deleted with its snapshot, counted from the
    // pause time its record keeps (so across restarts); 0: kept for ever.
    std::chrono::seconds paused_ttl{30 * 24 * 3600};
    // Where paused contexts' snapshots are kept (never listed among their owner's snapshots);
    // empty until the server fills it in.
    std::filesystem::path paused_snapshot_dir;
    // GET /metrics: executions by API and status, their time, queue wait and truncations.
    kernels::kernel_metrics* metrics = nullptr;
};

}  // namespace callisto::gateway::interpreter
