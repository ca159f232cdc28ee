#pragma once
// The process behind one kernel session: its runtime directory and connection file, its
// sandbox, the spawn, the wait for a sandboxed kernel's sockets, the ready timeout, the bounded
// automatic restarts, and the stop escalation (shutdown_request, then SIGTERM after
// shutdown_wait, then SIGKILL after kill_grace). Runs on the session's strand and tells the
// session what happened through an observer it holds weakly.

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "common/logger.hpp"
#include "gateway/kernels/records/kernel_record.hpp"
#include "gateway/kernels/session/kernel_environment.hpp"
#include "gateway/kernels/session/kernel_output_log.hpp"
#include "gateway/kernels/session/kernel_ports.hpp"
#include "kernelproto/connection_info.hpp"
#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/kernel_runtime_dir.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/sandbox/session_sandbox.hpp"

namespace callisto::gateway::kernels {

class kernel_process : public std::enable_shared_from_this<kernel_process> {
public:
    // Called on the strand.
    class observer {
    public:
        virtual ~observer() = default;
        // The kernel's sockets may be connected to now.
        virtual void on_sockets_ready() = 0;
        // A sandboxed kernel's ipc directory failed its check; the process must go.
        virtual void on_socket_check_failed(const std::string& why) = 0;
        // No kernel_info_reply within the ready timeout.
        virtual void on_ready_timeout() = 0;
        // The process exited without being asked to.
        virtual void on_exit(const launcher::exit_status& status) = 0;
    };

    using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;

    kernel_process(kernel_environment& env, strand_type strand, std::string kernel_id,
                   launcher::kernelspec spec, std::map<std::string, std::string> extra_env,
                   logger log);
    ~kernel_process();  // SIGKILL to a process still running: the last line of defence

    void set_observer(std::weak_ptr<observer> o) { observer_ = std::move(o); }
    // What the kernel may reach through the egress proxy (issue 36); before spawn(). Each
    // process of a kernel that has any gets the proxy variables, and its jail a listener
    // before the kernel is declared ready.
    void set_egress(egress_request egress) { egress_ = std::move(egress); }
    // The sandbox of another kernel of the same owner, shared: this one's processes run as its
    // uid with its workdir, in its cgroup under its limits (E2B: a sandbox's second context
    // sees the first one's files, and all share the sandbox's memory); before spawn(). Each
    // start still gets its own jail. The sandbox goes with the last kernel holding it.
    void share_sandbox(std::shared_ptr<launcher::session_sandbox> sandbox) {
        sandbox_ = std::move(sandbox);
    }
    // Its sandbox (null with --sandbox=off, or between drop_sandbox() and the next spawn()),
    // for another kernel to share. On the strand.
    const std::shared_ptr<launcher::session_sandbox>& sandbox() const { return sandbox_; }
    // HTTP_PROXY and its kin pointing at the listener in the kernel's namespace, NO_PROXY
    // for its own loopback (ipykernel's, a server the code starts itself).
    static std::map<std::string, std::string> egress_variables();

    // A fresh process with a new connection file (the sandbox's uid and workdir outlive
    // restarts). "" once it runs; else why it could not start.
    [[nodiscard]] std::string spawn();
    // Takes over the process an earlier gateway started and recorded (--state-dir): its
    // runtime directory, sandbox and cgroup, and watches its exit; with egress (set_egress
    // from the record), a new listener in its jail and a proxy with the same rules. "" once
    // adopted; else why not, and the process (if it still runs) was killed, its leftovers
    // removed.
    [[nodiscard]] std::string adopt(const kernel_record& record);
    // What the next gateway needs to adopt the running process (owner left empty).
    kernel_record record() const;
    bool running() const { return pid_ > 0; }
    pid_t pid() const { return pid_; }
    bool forked() const { return forked_; }  // by a zygote, rather than exec'd
    bool sandboxed() const { return sandbox_ != nullptr; }
    const kernelproto::connection_info& connection() const { return runtime_dir_->connection(); }
    void cancel_ready_timeout() { ready_timer_.cancel(); }
    void signal_group(int sig);
    // SIGINT where the kernel itself gets it, as Jupyter's signal interrupt_mode does: the
    // process group of a plain exec; under bwrap, the group of the sandbox's init, which the
    // kernel shares; a zygote's fork's pid 1, which passes it on to the kernel's group.
    void interrupt();

    // Stops it: when the session has sent shutdown_request (`asked`), SIGTERM follows after
    // shutdown_wait, else at once; SIGKILL after kill_grace. `then` runs once it exited.
    void stop(bool asked, std::function<void()> then);
    // Forgets the runtime directory and the ready timeout (the process is gone).
    void release();
    // Between a stop and the next spawn(): gives the sandbox up (its uid back to the pool, its
    // workdir with every file in it removed), so that the next process gets a new uid, an empty
    // workdir and a new /tmp. A start-up file (IPython's profile, ~/.Rprofile, a usercustomize
    // module), a planted temp file or a process still holding the old uid cannot reach it.
    void drop_sandbox();

    // At most autorestart_limit automatic restarts per autorestart_window, so a kernel that
    // dies at once every time ends as dead instead of looping. True when one more may happen.
    bool may_auto_restart();

    // What the process wrote last before it exited on its own (a traceback, bwrap's "execvp:
    // No such file or directory"), at most max_last_words bytes; "" until then.
    const std::string& last_words() const { return last_words_; }
    static constexpr std::size_t max_last_words = 1000;
    std::size_t recent_auto_restarts() const { return auto_restarts_.size(); }

private:
    launcher::process_supervisor::exit_handler exit_handler(
        std::shared_ptr<launcher::sandboxed_kernel> boxed);
    void arm_ready_timer();
    // Opens the listener in the jail of `pid` and the kernel's proxy (egress_open_); "" or
    // why not.
    [[nodiscard]] std::string open_egress(pid_t pid);
    void await_sockets(pid_t pid,
                       std::optional<std::chrono::steady_clock::time_point> sockets_seen);
    void on_exit(pid_t pid, const launcher::exit_status& status);
    template <class F>
    void tell(F&& f) {
        if (auto o = observer_.lock()) f(*o);
    }

    kernel_environment& env_;
    strand_type strand_;
    const std::string id_;
    const launcher::kernelspec spec_;
    const std::map<std::string, std::string> extra_env_;
    logger log_;
    std::weak_ptr<observer> observer_;
    boost::asio::steady_timer ready_timer_;
    boost::asio::steady_timer stop_timer_;

    std::unique_ptr<launcher::kernel_runtime_dir> runtime_dir_;
    std::shared_ptr<launcher::session_sandbox> sandbox_;  // null with --sandbox=off
    std::shared_ptr<kernel_output_log> output_;           // the process's stdout and stderr
    egress_request egress_;
    std::shared_ptr<void> egress_open_;  // the listener in the running process's namespace
    pid_t pid_ = 0;
    bool forked_ = false;
    std::string cgroup_name_;        // of the running process, "" without one
    std::string last_words_;         // of the last process that exited on its own
    std::function<void()> on_gone_;  // set while a stop we asked for is under way
    std::deque<std::chrono::steady_clock::time_point> auto_restarts_;  // within the window
};

}  // namespace callisto::gateway::kernels
