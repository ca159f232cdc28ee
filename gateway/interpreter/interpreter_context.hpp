#pragma once
// A context of the interpreter API: one kernel, one workdir, and the executions submitted to
// it, run one at a time from a bounded queue. It listens to its kernel as a kernel_client,
// next to any Jupyter WebSocket clients.
//
// Everything mutable lives on the context's strand; deliver() (kernel strand) and the public
// methods (HTTP threads) post there, and answer through callbacks.

#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <nlohmann/json.hpp>

#include "common/logger.hpp"
#include "gateway/interpreter/context_record.hpp"
#include "gateway/interpreter/execution.hpp"
#include "gateway/interpreter/execution_recorder.hpp"
#include "gateway/interpreter/interpreter_settings.hpp"
#include "gateway/interpreter/workdir_changes.hpp"
#include "gateway/kernels/lifecycle/kernel_policy.hpp"
#include "gateway/kernels/session/in_process_client.hpp"
#include "gateway/kernels/session/kernel_session.hpp"
#include "gateway/languages/execution_language.hpp"
#include "gateway/languages/kernel_dialect.hpp"

namespace callisto::gateway::interpreter {

// How a context came to be, and what becomes of its kernel afterwards.
struct context_options {
    kernels::kernel_policy policy = kernels::kernel_policy::reuse;
    bool one_shot = false;        // made for one POST /v1/executions; keeps no files
    bool via_mcp = false;         // made by an MCP session's tools (shown to admins)
    std::size_t kernel_uses = 1;  // contexts or one-shot runs its kernel served, this one too
    bool via_e2b = false;         // an E2B sandbox's (its facade finds it by id: never paused)
    // The context whose files this one works in (context_request::share_files_with): its
    // workdir is that one's, not removed with it. Empty: its own.
    std::string shares_files_of;
    // Where a sandboxed kernel is sent when the context opens and after each restart
    // (context_request::start_dir); empty: it stays in /work, where it starts.
    std::string start_dir;
    // HOME for its code, set with start_dir (context_request::home); empty: the kernel's.
    std::string home;
};

class interpreter_context : public kernels::in_process_client,
                            public std::enable_shared_from_this<interpreter_context> {
public:
    enum class submit_outcome { accepted, repeated, queue_full, closed, refused };
    struct submit_result {
        submit_outcome outcome;
        std::shared_ptr<execution> exec;  // accepted, repeated
        std::string why;                  // refused: a sentence for the client
    };

    // `workdir` is the context's directory as the gateway sees it; with chdir_kernel the
    // kernel is told to change into it (after every start), else it already runs there.
    interpreter_context(boost::asio::io_context& ioc, std::string id, std::string owner,
                        std::shared_ptr<kernels::kernel_session> kernel,
                        std::filesystem::path workdir, bool chdir_kernel, context_options options,
                        const interpreter_settings& settings, logger log);

    const std::string& id() const { return id_; }
    const std::string& owner() const { return owner_; }
    const std::shared_ptr<kernels::kernel_session>& kernel() const { return kernel_; }
    const std::filesystem::path& workdir() const { return workdir_; }
    // The workdir as the kernel sees it: the sandbox's /work, or the context's own directory.
    std::string kernel_workdir() const;
    // The host pid behind the kernel (kernel_session::process_id): the sandbox a command
    // beside the kernel enters (E2B's commands). 0 while none runs. Thread-safe.
    pid_t kernel_pid() const { return kernel_->process_id(); }
    const context_options& options() const { return options_; }
    languages::kernel_dialect dialect() const { return dialect_; }
    // Why this context's kernel cannot run the request (a language it does not run, "env" in a
    // kernel the gateway cannot set variables in), or nullopt. Thread-safe.
    [[nodiscard]] std::optional<std::string> refusal(const execution_request& request) const;
    nlohmann::json model() const;  // thread-safe
    // Something queued or running (thread-safe): the kernel is not fit to be kept.
    bool busy() const { return running_ || waiting_ > 0; }

    // Called once when the kernel goes away under the context (deleted through /api/kernels,
    // culled, the server stopping), not when close() is called. Set before open().
    void on_kernel_gone(std::function<void(std::string reason)> fn) {
        on_kernel_gone_ = std::move(fn);
    }
    // Told once, on the strand, when the context closes for any reason (deleted, culled, its
    // kernel gone, the server stopping), after its executions have ended; at once if it has
    // closed already. For the sockets that follow it: the context holds the watcher weakly, so
    // a socket that went away leaves nothing behind.
    using close_watcher = std::function<void(const std::string& reason)>;
    void watch_close(std::weak_ptr<const close_watcher> watcher);
    // Attaches to the kernel; call once, after construction.
    void open();
    // Before open(), for a context an earlier gateway recorded: its creation time and its
    // executions come back (execution::restored). Throws std::invalid_argument on a
    // malformed execution record.
    void restore(const context_record& record);
    // Fails what is queued or running and detaches; the kernel itself is the caller's.
    void close(std::string reason);

    // `done` runs on the strand, before the execution can produce its first event, so a
    // subscriber it adds misses nothing.
    void submit(execution_request request, std::function<void(submit_result)> done);
    void find(const std::string& execution_id,
              std::function<void(std::shared_ptr<execution>)> done);
    void list(std::function<void(nlohmann::json)> done);
    // Queued: cancelled. Running: interrupted, then restarted after the grace period if it
    // does not stop. done(nullptr) when there is no such execution.
    void interrupt(const std::string& execution_id,
                   std::function<void(std::shared_ptr<execution>)> done);
    // Restarts the kernel; a running execution ends as "interrupted", state not preserved.
    void restart(std::function<void(std::string error)> done);

    // kernel_client: messages as they are, no WebSocket encoding.
    void deliver_message(kernelproto::channel ch,
                         std::shared_ptr<const kernelproto::message> msg) override;
    void deliver(std::shared_ptr<const kernelproto::websocket_frame> frame) override;
    void close_from_kernel(std::string reason) override;

private:
    enum class ladder { none, deadline, client_interrupt, restarting };

    void start_next();
    void close_from_kernel_now(const std::string& reason);
    void on_kernel_message(kernelproto::channel ch, const kernelproto::message& msg);
    void maybe_finish();
    void finish_current(execution_status status, std::optional<bool> state_preserved);
    void on_deadline();
    void begin_interrupt(ladder why);
    void on_grace_expired();
    void send_chdir();
    void send_silent(std::string code);
    void remember(const std::shared_ptr<execution>& e);
    // The context's record (--state-dir) follows its executions: rewritten when one is
    // queued, starts or ends; removed when the context closes. One-shot contexts have none.
    void save_record() const;
    // The audit log's run line, before the kernel has the code: "" when it may run (written,
    // or no log, or --audit-required=off), else why not.
    [[nodiscard]] std::string audit_start(const execution& e);
    // Its end line, linked to the run line.
    void audit_end(const execution& e);

    const std::string id_;
    const std::string owner_;
    const std::shared_ptr<kernels::kernel_session> kernel_;
    const std::filesystem::path workdir_;
    const bool chdir_kernel_;
    const languages::kernel_dialect dialect_;
    const context_options options_;
    std::function<void(std::string)> on_kernel_gone_;
    std::vector<std::weak_ptr<const close_watcher>> close_watchers_;  // strand
    std::string close_reason_;                                        // strand
    const interpreter_settings& settings_;
    const std::string session_id_;
    std::chrono::system_clock::time_point created_at_;  // set once, before open()
    logger log_;
    boost::asio::strand<boost::asio::io_context::executor_type> strand_;
    boost::asio::steady_timer deadline_timer_;
    boost::asio::steady_timer grace_timer_;

    // strand state
    bool closed_ = false;
    // Runners sent to the kernel's current process (sent again after a restart): the load is
    // a no-op once done, but a round trip through the kernel all the same.
    std::set<languages::execution_language> runners_loaded_;
    std::deque<std::shared_ptr<execution>> queue_;
    std::shared_ptr<execution> current_;
    std::optional<execution_recorder> recorder_;  // the current execution's
    std::uint64_t audit_seq_ = 0;                 // the current execution's run line, or 0
    // The workdir's files before the current execution ran, to name in the audit log what it
    // created or changed (only with --audit-log).
    std::optional<workdir_state> workdir_before_;
    ladder ladder_ = ladder::none;
    std::map<std::string, std::shared_ptr<execution>> executions_;
    std::deque<std::string> finished_order_;   // oldest first, for forgetting beyond the limit
    std::map<std::string, std::string> keys_;  // idempotency key -> execution id

    std::atomic<std::size_t> waiting_{0};
    std::atomic<bool> running_{false};
};

}  // namespace callisto::gateway::interpreter
