#pragma once
// One kernel: its process, its ZMQ link, its attached clients and its lifecycle.
//
// Everything mutable lives on the session's strand. The reactor and the process supervisor
// report from their own threads; their reports are posted here, tagged with the link id or pid
// they belong to, so a report about a previous process (before a restart) is recognised and
// ignored. The REST model (kernel_model) has its own small mutex so HTTP handlers read it
// directly; the clients and what reaches them are the iopub_broadcaster's.

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <nlohmann/json.hpp>

#include "gateway/kernels/lifecycle/culling_policy.hpp"
#include "gateway/kernels/output/message_budget.hpp"
#include "gateway/kernels/session/drop_recovery.hpp"
#include "gateway/kernels/session/heartbeat_watch.hpp"
#include "gateway/kernels/session/iopub_broadcaster.hpp"
#include "gateway/kernels/session/kernel_client.hpp"
#include "gateway/kernels/session/kernel_environment.hpp"
#include "gateway/kernels/session/kernel_error.hpp"
#include "gateway/kernels/session/kernel_model.hpp"
#include "gateway/kernels/session/kernel_process.hpp"
#include "gateway/kernels/session/orphan_replies.hpp"
#include "gateway/kernels/session/websocket_executions.hpp"
#include "kernelproto/message.hpp"
#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/sandbox/session_sandbox.hpp"
#include "transport/reactor.hpp"

namespace callisto::gateway::kernels {

enum class kernel_state {
    starting,       // process spawned, waiting for the first kernel_info_reply
    running,        // connected; execution_state tells idle/busy
    restarting,     // old process going, new one coming
    shutting_down,  // DELETE or server stop in progress
    dead,           // the process exited on its own; the model says why
    gone,           // shut down and cleaned up
};
std::string_view to_string(kernel_state state);

class kernel_session : public std::enable_shared_from_this<kernel_session>,
                       private kernel_process::observer {
public:
    using result_handler = std::function<void(kernel_outcome)>;

    // `session_id` is the Jupyter session and ZeroMQ routing identity to use ("" makes a new
    // one); an adopted kernel keeps its recorded one.
    kernel_session(kernel_environment& env, std::string id, launcher::kernelspec spec,
                   std::map<std::string, std::string> extra_env, std::string session_id = {});
    ~kernel_session();

    const std::string& id() const { return id_; }
    const std::string& kernelspec_name() const { return spec_.name; }
    const std::string& language() const { return spec_.language; }  // the kernelspec's

    // Spawns the process and waits until it answers; on_ready fires once.
    void start(result_handler on_ready);
    // Instead of start(): takes over the kernel an earlier gateway left running (--state-dir);
    // on_ready as for start, once it answered kernel_info with its recorded key. `shared`: the
    // sandbox it ran in, another kernel's (share_sandbox), taken on this kernel's strand.
    void adopt(kernel_record record, result_handler on_ready,
               std::shared_ptr<launcher::session_sandbox> shared = nullptr);
    // Stops the process (shutdown_request with restart=true, then signals) and starts a new one
    // with a fresh connection file; clients stay attached and see iopub status "restarting".
    void restart(result_handler on_done);
    // A new process in a new sandbox, as clean as a fresh kernel: the old process is not asked
    // to shut down (SIGTERM at once), and its uid, workdir and /tmp go with it (only the
    // kernel's id stays). For a kernel kept for its owner's next context, where nothing of
    // the last one may remain. With a zygote it costs a fork, else an exec.
    void renew(result_handler on_done);
    // Whether the running process was forked by a zygote (any thread).
    bool forked() const { return model_.forked(); }
    // SIGINT to the kernel's process group, or interrupt_request when the kernelspec says
    // interrupt_mode "message".
    void interrupt(result_handler on_done);
    // shutdown_request, then SIGTERM after shutdown_wait (at once, unasked, when the settings'
    // ask_before_removing is off), then SIGKILL after kill_grace; closes the clients (telling
    // them `reason`) and removes every file. Safe to call in any state, more than once.
    void shutdown(std::function<void()> on_done, std::string reason = "kernel shut down");

    // With `since`, the client first receives the iopub output after that sequence number that
    // the replay buffer still holds, and a notice for any part it no longer holds.
    void attach(const std::shared_ptr<kernel_client>& client,
                std::optional<std::uint64_t> since = std::nullopt);
    void detach(const kernel_client* client);
    // A client's message: replies on shell/control and input requests on stdin go back to the
    // client that asked; iopub goes to every client.
    void submit(std::weak_ptr<kernel_client> from, kernelproto::channel ch,
                kernelproto::message msg);

    // {id, name, last_activity, execution_state, connections[, reason]}. Thread-safe.
    // The kernel model (kernel_model::to_json).
    nlohmann::json model(kernel_process_view view = kernel_process_view::hidden) const;
    kernel_state state() const;
    // The host pid of the process behind the kernel (its bwrap, or its jail's pid 1 when a
    // zygote forked it), 0 while none runs. Thread-safe.
    pid_t process_id() const { return model_.pid(); }
    // What the culling rules look at. Thread-safe.
    kernel_activity activity() const;

    // What the kernel may reach through the egress proxy; set once, before start().
    void set_egress(egress_request egress);
    const egress_request& egress() const { return egress_; }

    // Runs in the sandbox of another kernel of its owner (kernel_process::share_sandbox); set
    // once, before start(). Such a kernel is never kept for reuse: its files are not its own.
    void share_sandbox(std::shared_ptr<launcher::session_sandbox> sandbox);
    bool shares_sandbox() const { return shares_sandbox_; }
    // `then` gets this kernel's sandbox (null: none, --sandbox=off), on the strand, for a new
    // kernel to share.
    void with_sandbox(std::function<void(std::shared_ptr<launcher::session_sandbox>)> then);

    // The user the kernel belongs to; set once when it is created or claimed from the pool.
    std::string owner() const;
    void assign_owner(std::string name);

    // Handed to a client (claimed from the warm pool or the kept kernels): that counts as
    // activity, so the idle culler does not take a kernel someone has just been given, before
    // its first request, for the time it sat waiting. Thread-safe.
    void mark_claimed();
    // What holds the kernel now, for an admin's view of it (kernel_holder). Thread-safe.
    void hold(kernel_holder holder, std::string context_id = {});
    // An interpreter context sends a user's execution (a Jupyter client's are counted on
    // their way through submit). Thread-safe.
    void count_execution();

private:
    class link_listener;
    struct queued_request {
        std::weak_ptr<kernel_client> from;
        kernelproto::channel ch;
        kernelproto::message msg;
    };
    // A request sent to the kernel, until its reply: who asked, and the request's header
    // (its content left out) for an answer the gateway makes if the reply is lost.
    struct in_flight {
        std::weak_ptr<kernel_client> client;
        kernelproto::channel ch;
        kernelproto::message request;
    };

    // All of these run on strand_.
    void spawn_process();
    // The kernel record (--state-dir) follows the process: written once it runs, and when
    // its owner changes; removed when it is dead or gone.
    // "" when written (or there is no --state-dir), else why not.
    [[nodiscard]] std::string save_record();
    // --state-required and the record could not be written: the process is stopped, the
    // start (or restart) fails with the reason.
    void refuse_unrecorded(const std::string& why);
    void forget_record();
    void open_link();
    void on_link_message(transport::link_id link, kernelproto::channel ch,
                         kernelproto::message msg);
    void on_link_connected(transport::link_id link);
    void on_heartbeat(transport::link_id link, bool beating);
    // ZeroMQ dropped a message over the part limit on `ch` (drop_recovery.hpp): the clients are
    // told, and barriers find out what was lost with it.
    void on_message_dropped(transport::link_id link, kernelproto::channel ch);
    void send_barrier(kernelproto::channel ch);
    // Once the barriers are in: each request that lost its reply is answered with an error, each
    // lost idle is published; until then, a shell barrier whose status did not come is sent again.
    void settle_drops();
    void answer_lost_reply(const in_flight& lost);
    // Kills a kernel whose heartbeat has been missing past the timeout (heartbeat_watch.hpp).
    void on_frozen(std::chrono::seconds silent_for);
    // What the process reports (kernel_process::observer).
    void on_sockets_ready() override;
    void on_socket_check_failed(const std::string& why) override;
    void on_ready_timeout() override;
    void on_exit(const launcher::exit_status& status) override;
    // `ask`: send shutdown_request (with `restart`) and give the kernel shutdown_wait first.
    void stop_process(bool restart, std::function<void()> then, bool ask = true);
    // `renew`: the next process gets a new sandbox (renew() above).
    void restart_process(bool ask, bool renew, result_handler on_done);
    void release_process();
    void finish_start(kernel_outcome outcome);
    void forward(const std::weak_ptr<kernel_client>& from, kernelproto::channel ch,
                 kernelproto::message msg);
    // A reply whose client is not here (orphans_): it left, or (adopted) the request was sent
    // before the gateway restarted; and the Jupyter session a client showed (its URL's
    // session_id, its messages' header).
    void deliver_orphan(kernelproto::channel ch, kernelproto::message msg);
    void note_client_session(const std::shared_ptr<kernel_client>& client,
                             const std::string& session);
    // An execute_input's code within max_echoed_code_bytes (output_fields.hpp), in everything
    // the gateway relays and keeps.
    void cap_echoed_code(kernelproto::message& msg);
    // Tells every client when messages were dropped for being over the kernel's budget.
    void report_dropped(const kernelproto::message& next);
    // The requests of WebSocket clients that run code (code_requests.hpp): noted on the way to
    // the kernel, reported when the kernel replies or can no longer reply. False when the
    // request is refused (and answered): by its form, or by the observer.
    bool track_request(const std::shared_ptr<kernel_client>& client, kernelproto::channel ch,
                       const kernelproto::message& msg);
    void track_reply(const kernelproto::message& msg);
    void report(const websocket_execution& e);
    // Every pending execution is over; with `why` (the kernel died), each client waiting for a
    // reply gets an error reply that says so.
    void lose_executions(const std::string& why = {});
    // Answers a request that runs no code (refused, or its kernel died) as the kernel answers
    // a failed one, on the channel it came on: an execute_request with busy, error, idle (when
    // `with_status`) and its execute_reply; a debug_request with an unsuccessful debug_reply.
    void answer_failed_request(const std::shared_ptr<kernel_client>& client,
                               kernelproto::channel ch, const kernelproto::message& request,
                               const std::string& ename, const std::string& evalue,
                               bool with_status);
    // Returns the execution_state of a status message ("" for other messages).
    std::string track_activity(const kernelproto::message& msg);
    void set_state(kernel_state s, std::string execution_state, std::string reason = {});

    kernel_environment& env_;
    const std::string id_;
    const launcher::kernelspec spec_;
    const std::map<std::string, std::string> extra_env_;
    egress_request egress_;         // set before start, then read-only
    bool shares_sandbox_ = false;   // set before start, then read-only
    const std::string session_id_;  // our ZMQ session and routing identity
    logger log_;
    boost::asio::strand<boost::asio::io_context::executor_type> strand_;

    // Written on strand_ only; atomic so REST handlers can read it.
    std::atomic<kernel_state> state_ = kernel_state::starting;

    // strand_ state
    std::shared_ptr<kernel_process> process_;
    std::optional<transport::link_id> link_;
    bool connected_ = false;
    bool adopting_ = false;  // adopted, its first kernel_info not answered yet
    // Replies whose client is not here, on their way to the next client of the session that
    // sent the request: one that left and reconnects (as jupyter_server keeps a session's
    // replies while its WebSocket is away), or, for a process an earlier gateway started, the
    // requests that gateway sent. Made anew for each process.
    std::optional<orphan_replies> orphans_;
    // Adopted: every client message's header is read for its session (requests from before the
    // restart may wait for any client); else only while a reply waits.
    bool sessions_from_headers_ = false;
    std::vector<result_handler> ready_waiters_;
    std::vector<std::function<void()>> shutdown_waiters_;
    std::unordered_map<std::string, in_flight> awaiting_reply_;
    // Shell requests whose idle has not come, by msg_id: the request's header. What a message
    // dropped on iopub may have lost.
    std::unordered_map<std::string, std::string> awaiting_idle_;
    // The parent header of the kernel's latest busy status: where a notice of output lost goes.
    std::string busy_parent_header_;
    drop_recovery drops_;
    boost::asio::steady_timer barrier_timer_;
    int status_barriers_sent_ = 0;
    std::deque<queued_request> queued_;        // client requests held until the kernel is connected
    std::shared_ptr<message_budget> inbound_;  // shared with the link listener and the leases
    std::chrono::steady_clock::time_point spawned_at_;  // the current process's
    const bool heartbeat_while_busy_;  // its heartbeat has a thread of its own (ipykernel)
    heartbeat_watch heartbeat_;
    std::string frozen_reason_;  // set when the gateway killed the process for being frozen
    websocket_executions executions_;
    kernel_model model_;  // read from any thread
    iopub_broadcaster clients_;
};

}  // namespace callisto::gateway::kernels
