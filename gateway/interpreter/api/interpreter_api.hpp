#pragma once
// The /v1 routes: Callisto's own API for chat frontends and agents, next to the Jupyter one.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <variant>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "gateway/http/http_message.hpp"
#include "gateway/http/incoming_request.hpp"
#include "gateway/http/ndjson_stream.hpp"
#include "gateway/http/router.hpp"
#include "gateway/interpreter/context_registry.hpp"
#include "gateway/interpreter/oneshot_executions.hpp"
#include "gateway/interpreter/snapshot_store.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::interpreter {

// Takes the connection over for a streamed answer; called on the connection's strand, from
// inside the route's method, at most once.
using take_stream_fn = std::function<std::shared_ptr<ndjson_stream>()>;

class interpreter_api {
public:
    explicit interpreter_api(context_registry& contexts);
    ~interpreter_api();

    // One method a route (the table in gateway/routes.cpp), each reading its path's
    // {context_id}, {execution_id} or {path}. The two that may answer with an NDJSON stream
    // (Accept: application/x-ndjson) take the connection for it through `take_stream`.
    void list_languages(incoming_request in);
    void list_contexts(incoming_request in);
    void create_context(incoming_request in);
    void get_context(incoming_request in);
    void delete_context(incoming_request in);
    void restart_context(incoming_request in);
    void list_executions(incoming_request in);
    void create_execution(incoming_request in, const take_stream_fn& take_stream);
    void get_execution(incoming_request in);
    void interrupt_execution(incoming_request in);
    void list_files(incoming_request in);
    void upload_files(incoming_request in);   // a multipart/form-data form
    void download_file(incoming_request in);  // answered by respond_file, read as it is sent
    void put_file(incoming_request in);
    void delete_file(incoming_request in);
    void create_oneshot(incoming_request in, const take_stream_fn& take_stream);
    void get_oneshot(incoming_request in);
    void interrupt_oneshot(incoming_request in);
    // Snapshots (issue 37): of an idle Python context, listed, read and deleted by their
    // owner; POST /v1/contexts {"from_snapshot": ID} restores one (create_context).
    void create_snapshot(incoming_request in);
    void list_snapshots(incoming_request in);
    void get_snapshot(incoming_request in);
    void delete_snapshot(incoming_request in);
    // POST /v1/contexts/{id}/fork {"count": N}: N new contexts, each restored from one
    // snapshot of this one into its own fresh kernel; all made, or none.
    void fork_context(incoming_request in);
    static constexpr std::size_t max_forks = 16;
    // POST /v1/contexts/{id}/pause: the context's state saved as a snapshot of its own, its
    // kernel shut down; listed "paused" until its next execution or POST .../resume brings it
    // back into a fresh kernel under the same id. Pausing a paused context answers 200.
    void pause_context(incoming_request in);
    void resume_context(incoming_request in);

    // The same operations for a caller other than the routes (the MCP tools), given the ids
    // and the sender: the same checks (owner, quotas, busy, language), audit lines, metrics
    // and answers; `respond` gets what the route would answer, from any thread. A paused
    // context the id names is resumed first, as the routes do.
    void snapshot_for(const std::string& context_id, const user& who, respond_fn respond);
    void list_snapshots_for(const user& who, respond_fn respond);
    void delete_snapshot_for(const std::string& snapshot_id, const user& who, respond_fn respond);
    // A new context of `who` from their snapshot (201 with its model, as POST /v1/contexts).
    void restore_for(const std::string& snapshot_id, const user& who, respond_fn respond);
    void fork_for(const std::string& context_id, const user& who, std::size_t count,
                  respond_fn respond);
    void pause_for(const std::string& context_id, const user& who, respond_fn respond);
    void resume_for(const std::string& context_id, const user& who, respond_fn respond);
    // The live context `context_id` of `who`, resumed first when it is paused: found(it, the
    // resume's {"duration_ms"} or null when it was live), or respond(404, 410, or the resume's
    // failure).
    using found_fn =
        std::function<void(std::shared_ptr<interpreter_context> context, nlohmann::json resumed)>;
    void live_context_for(const std::string& context_id, const user& who, respond_fn respond,
                          found_fn found);

    // At start, after the live contexts are restored: the paused contexts an earlier gateway
    // recorded (--state-dir), and paused snapshots no record names removed. Then the idle
    // pauser (--pause-idle) starts.
    void start();
    // The server is stopping: the idle pauser's timer goes.
    void stop();

    // The paused context `id` of `who` (any, for an admin) resumed, once however many ask at
    // once: done(0, "", its resume in ms) once it is live again, done(status, why, ms) when it
    // could not be, done(404, ...) when there is no such paused context. Any thread.
    using resume_done = paused_table::waiter;
    void resume(const std::string& id, const user& who, resume_done done);
    // The answer to a request whose resume failed (outcome.status != 0).
    static http_response resume_failure(const paused_table::outcome& how);
    bool is_paused(const std::string& id, const user& who) const {
        return is_valid_kernel_id(id) && contexts_.paused_for(id, who).has_value();
    }

    // The caller's context (an admin: any), or null for a malformed or unknown id.
    std::shared_ptr<interpreter_context> find_context(const std::string& id,
                                                      const user& who) const {
        return is_valid_kernel_id(id) ? contexts_.find_for(id, who) : nullptr;
    }
    const interpreter_settings& settings() const { return contexts_.settings(); }

    // The body limit of PUT /v1/contexts/{id}/files/{path} and of POST .../files (a form).
    std::size_t max_upload_bytes() const { return contexts_.settings().max_upload_bytes; }

private:
    // The sender's context the path names; null once the request is answered 404 (410 for a
    // context culled lately).
    std::shared_ptr<interpreter_context> context_of(const incoming_request& in) const;
    std::shared_ptr<interpreter_context> context_of(const std::string& id, const user& who,
                                                    const respond_fn& respond) const;
    // GET (or, interrupting it, DELETE) of an execution of the context the path names.
    void answer_execution(incoming_request in, bool interrupt);
    // The sender's one-shot execution the path names; none once the request is answered 404.
    std::optional<oneshot_executions::entry> oneshot_of(const incoming_request& in) const;
    // Runs work(in, context) on file_pool_, for the context the path names: reads and writes
    // of up to --upload-limit bytes block, and must not hold up the I/O threads that serve
    // every other client.
    template <class Work>
    void on_file_pool(incoming_request in, Work work);
    // Submits to the context and answers with one JSON document at the end, or with the
    // NDJSON stream when `stream` is set. on_accepted runs first for a new execution,
    // on_refused when the context would not take it (closed, queue full).
    void submit_and_answer(const std::shared_ptr<interpreter_context>& context,
                           execution_request request, std::string location_prefix,
                           respond_fn respond, std::shared_ptr<ndjson_stream> stream,
                           std::function<void(const std::shared_ptr<execution>&)> on_accepted = {},
                           std::function<void()> on_refused = {}, nlohmann::json resumed = nullptr);
    // For a route that needs the context live: when the path names a paused context of the
    // sender, it is resumed and `again` runs with the request (true: the request is taken);
    // false: not paused, go on.
    bool resume_first(incoming_request& in, void (interpreter_api::*again)(incoming_request));
    // The same for the *_for operations: `again` runs once it is live, else respond(why not).
    bool resume_then(const std::string& id, const user& who, const respond_fn& respond,
                     std::function<void()> again);
    // Pauses it (the checks, the snapshot, the kernel shut down): done(its paused model) or
    // done(the error's answer). `trigger`: "request" or "idle", for the log, audit and metrics.
    using pause_done = std::function<void(std::variant<nlohmann::json, http_response>)>;
    void pause(const std::shared_ptr<interpreter_context>& context, const std::string& by,
               std::string trigger, pause_done done);
    // Runs `sweep` on `timer` every quarter of `period` (1 s to 60 s) until stop().
    void sweep_periodically(boost::asio::steady_timer& timer, std::chrono::seconds period,
                            void (interpreter_api::*sweep)());
    void pause_idle_contexts();
    // --paused-ttl: the paused contexts past it deleted with their snapshots, audited and
    // counted; checked at start (the pause times are in the records) and then periodically.
    void expire_paused();
    // GET /metrics: a snapshot, restore or fork done, its time and bytes (<0: not known).
    void count_operation(const char* operation, std::int64_t ms, double bytes) const;
    // The audit log's line for a snapshot, restore, fork, pause or resume (when there is one).
    void audit_operation(const std::string& operation, const std::string& user,
                         const std::string& context_id, const nlohmann::json& details) const;

    // POST /v1/contexts {"from_snapshot": ID}: the snapshot read and checked, a new context,
    // the files and the blob written into it, the namespace loaded by its kernel.
    void restore_context(context_request request, const user& who, respond_fn respond);
    // The same for any caller: done(the new context, its 201 answer), or done(null, the error).
    using restore_done =
        std::function<void(std::shared_ptr<interpreter_context> made, http_response answer)>;
    // From `store` (the users' snapshots, or the paused contexts'), into a context of the id
    // `id` (empty: a new one).
    void restore_snapshot(context_request request, const user& who, restore_done done,
                          snapshot_store* store = nullptr, std::string id = {});
    // Why an idle Python context's snapshot is not taken now (400, 409), if it is not.
    std::optional<http_response> snapshot_refusal(
        const std::shared_ptr<interpreter_context>& context) const;
    // The snapshot taken and stored for `owner`: its model, or why not.
    using snapshot_done = std::function<void(std::variant<nlohmann::json, snapshot_error>)>;
    void take_snapshot(const std::shared_ptr<interpreter_context>& context,
                       const std::string& owner, snapshot_done done,
                       snapshot_store* store = nullptr);
    // Runs code of the gateway's own in the context as an execution (so it queues, is
    // audited and has its deadline like any other), then done("") or done(why it failed).
    void run_internal(const std::shared_ptr<interpreter_context>& context, std::string code,
                      std::function<void(std::string error)> done);

    context_registry& contexts_;
    std::unique_ptr<snapshot_store> snapshots_;  // null when settings have no snapshot_dir
    // Paused contexts' snapshots: not their owner's to list or delete, and counted apart from
    // the snapshot quota (a quota of their own bytes); null as snapshots_.
    std::unique_ptr<snapshot_store> paused_states_;
    boost::asio::steady_timer idle_timer_;
    boost::asio::steady_timer expiry_timer_;
    std::atomic<bool> stopped_{false};
    oneshot_executions oneshots_;
    boost::asio::thread_pool file_pool_{2};
};

}  // namespace callisto::gateway::interpreter
