#include "gateway/kernels/session/kernel_process.hpp"

#include <csignal>
#include <stdexcept>

#include <boost/asio/post.hpp>

#include "gateway/kernels/records/kernel_record_store.hpp"
#include "kernelproto/ids.hpp"
#include "launcher/kernelspec/ipykernel_bootstrap.hpp"
#include "launcher/kernelspec/kernel_command.hpp"
#include "launcher/process/process_identity.hpp"
#include "launcher/sandbox/kernel_cgroup.hpp"
#include "launcher/sandbox/netns_listener.hpp"
#include "launcher/sandbox/sandboxed_kernel.hpp"

namespace callisto::gateway::kernels {

namespace asio = boost::asio;

namespace {
std::string short_dir_name(const std::string& kernel_id) { return kernel_id.substr(0, 8); }
}  // namespace

kernel_process::kernel_process(kernel_environment& env, strand_type strand, std::string kernel_id,
                               launcher::kernelspec spec,
                               std::map<std::string, std::string> extra_env, logger log)
    : env_(env),
      strand_(std::move(strand)),
      id_(std::move(kernel_id)),
      spec_(std::move(spec)),
      extra_env_(std::move(extra_env)),
      log_(std::move(log)),
      ready_timer_(strand_),
      stop_timer_(strand_) {}

std::map<std::string, std::string> kernel_process::egress_variables() {
    const std::string proxy = "http://127.0.0.1:" + std::to_string(egress_listen_port);
    const std::string local = "localhost,127.0.0.1,::1";
    // Upper and lower case: Python reads both, curl and R's libcurl only the lower-case
    // http_proxy (an upper-case HTTP_PROXY is ignored by them, as a CGI header could set it).
    return {{"HTTP_PROXY", proxy},  {"HTTPS_PROXY", proxy}, {"http_proxy", proxy},
            {"https_proxy", proxy}, {"NO_PROXY", local},    {"no_proxy", local}};
}

kernel_process::~kernel_process() {
    if (pid_ > 0) env_.processes.signal_group(pid_, SIGKILL);
}

std::string kernel_process::spawn() {
    last_words_.clear();
    std::shared_ptr<launcher::sandboxed_kernel> boxed;
    try {
        runtime_dir_ = std::make_unique<launcher::kernel_runtime_dir>(
            env_.settings.runtime_root, short_dir_name(id_) + "-" + kernelproto::random_hex(3),
            env_.settings.ipc_transport ? launcher::transport_kind::ipc
                                        : launcher::transport_kind::tcp,
            spec_.name);
        auto command = launcher::kernel_command(spec_, runtime_dir_->connection_file(),
                                                runtime_dir_->path(), extra_env_);
        // What runs when no zygote forks it; a zygote runs the ipykernel bootstrap itself.
        // A kernel to outlive the gateway must not watch for its parent's death (ipykernel's
        // parent poller would end it); the sandbox drops this variable anyway.
        if (!egress_.empty()) {
            // Not without its jail: an unsandboxed kernel has the host's network, and the
            // listener goes into the jail's namespace.
            if (!env_.sandbox || !env_.egress)
                throw std::runtime_error("network was asked for, and egress needs the sandbox");
            for (auto& [name, value] : egress_variables()) command.env[name] = value;
        }
        const bool outlive = env_.records != nullptr;
        if (outlive) command.env.erase("JPY_PARENT_PID");
        command.outlive_gateway = outlive;
        const auto exec_command = launcher::with_ipykernel_bootstrap(command, runtime_dir_->path());
        if (env_.sandbox) {
            // The session's uid, workdir and cgroup outlive restarts.
            if (!sandbox_)
                sandbox_ = std::make_shared<launcher::session_sandbox>(
                    *env_.sandbox, *env_.sandbox_uids, env_.settings.workdir_root, id_,
                    env_.settings.limits, spec_);
            boxed = sandbox_->prepare(exec_command, *runtime_dir_);
        }
        auto output = std::make_shared<kernel_output_log>(strand_, log_);
        auto what = boxed ? boxed->command() : exec_command;
        what.output_fd = output->child_end();
        // A zygote may fork it instead (kernel_ports.hpp): the same command, unwrapped.
        what.zygote = launcher::zygote_fork{spec_.name, command.argv, command.cwd,
                                            boxed ? std::optional(boxed->layout()) : std::nullopt};
        pid_ = env_.processes.spawn(what, exit_handler(boxed));
        if (boxed) boxed->spawned();
        cgroup_name_ = boxed ? boxed->cgroup_name() : "";
        forked_ = env_.processes.forked(pid_);
        output->start();
        output_ = std::move(output);
    } catch (const std::exception& e) {
        runtime_dir_.reset();
        pid_ = 0;
        return std::string("kernel failed to start: ") + e.what();
    }
    log_.info(
        "started " + spec_.name + " kernel, pid " + std::to_string(pid_) +
        (forked_ ? ", forked by its zygote" : "") +
        (boxed ? " (sandboxed as uid " + std::to_string(sandbox_->identity().uid) + ")" : ""));

    arm_ready_timer();
    if (boxed) {
        await_sockets(pid_, std::nullopt);
    } else {
        tell([](observer& o) { o.on_sockets_ready(); });
    }
    return {};
}

launcher::process_supervisor::exit_handler kernel_process::exit_handler(
    std::shared_ptr<launcher::sandboxed_kernel> boxed) {
    return [weak = weak_from_this(), strand = strand_, boxed](pid_t pid, launcher::exit_status st) {
        if (boxed) st = boxed->judge(st);  // OOM, CPU time: read before the cgroup goes
        asio::post(strand, [weak, pid, st] {
            if (auto self = weak.lock()) self->on_exit(pid, st);
        });
    };
}

void kernel_process::drop_sandbox() {
    if (running()) throw std::logic_error("kernel_process::drop_sandbox while the process runs");
    sandbox_.reset();
}

void kernel_process::arm_ready_timer() {
    ready_timer_.expires_after(env_.settings.kernel_ready_timeout);
    ready_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        if (ec) return;
        if (auto self = weak.lock()) self->tell([](observer& o) { o.on_ready_timeout(); });
    });
}

std::string kernel_process::adopt(const kernel_record& record) {
    std::shared_ptr<launcher::sandboxed_kernel> boxed;
    const bool sandboxed = record.uid.has_value() && env_.sandbox;
    const bool workdir_is_ours = record.workdir == env_.settings.workdir_root / id_;
    // Set by share_sandbox(): the sandbox of the kernel it ran beside, adopted before it.
    const bool shared = sandbox_ != nullptr;
    auto give_up = [&](const std::string& why) {
        // Not ours to keep: the process and its group go first, then what is left in its
        // cgroup (the cgroup's destructor kills it: a sandbox outlives a killed bwrap), then
        // its directories, and last its uid.
        kernel_record_store::kill_recorded_process(record);
        // Not when it ran in another kernel's sandbox (an E2B sandbox's second context): the
        // cgroup is that kernel's too, and it may be adopted.
        if (!boxed && sandboxed && !record.cgroup.empty() && workdir_is_ours) {
            try {
                launcher::kernel_cgroup leftover(launcher::adopt_existing, env_.sandbox->cgroups(),
                                                 record.cgroup);
            } catch (const std::exception&) {
            }
        }
        egress_open_.reset();
        boxed.reset();
        if (!sandbox_ && sandboxed && workdir_is_ours)
            launcher::session_workdir leftover(launcher::adopt_existing, record.workdir, true);
        sandbox_.reset();
        // A no-op once the uid was acquired (by this sandbox, or the one it shared).
        if (sandboxed) env_.sandbox_uids->cancel_reservation(*record.uid);
        runtime_dir_.reset();
        return "cannot adopt kernel " + id_ + ": " + why;
    };
    try {
        runtime_dir_ = std::make_unique<launcher::kernel_runtime_dir>(
            launcher::adopt_existing, record.runtime_dir, record.connection);
        if (record.uid.has_value() != (env_.sandbox != nullptr))
            return give_up(record.uid ? "it is sandboxed and the sandbox is off now"
                                      : "it is not sandboxed and the sandbox is on now");
        if (record.uid && shared &&
            (record.workdir != sandbox_->workdir() || *record.uid != sandbox_->identity().uid ||
             record.cgroup != sandbox_->cgroup_name()))
            return give_up("it ran as uid " + std::to_string(*record.uid) + " in " +
                           record.workdir.string() + ", not in the sandbox it shares");
        if (record.uid && !shared && !workdir_is_ours)
            return give_up("its workdir " + record.workdir.string() + " is not " +
                           (env_.settings.workdir_root / id_).string());
        if (record.uid) {
            if (!shared)
                sandbox_ = std::make_shared<launcher::session_sandbox>(
                    launcher::adopt_existing, *env_.sandbox, *env_.sandbox_uids, record.workdir,
                    *record.uid, record.cgroup, env_.settings.limits, spec_);
            boxed = sandbox_->adopt_running();
        }
    } catch (const std::exception& e) {
        return give_up(e.what());
    }
    if (auto why = kernel_record_store::still_running(record); !why.empty()) return give_up(why);
    if (!egress_.empty()) {
        // Its listener ended with the gateway that opened it, while the kernel kept its proxy
        // variables: opened again in the same jail, with the same rules and the same identity,
        // before the kernel is declared ready, so its next connection finds it.
        if (!boxed || !env_.egress) return give_up("it has network, and egress needs the sandbox");
        if (auto why = open_egress(record.pid); !why.empty()) return give_up(why);
    }
    if (!env_.processes.adopt(record.pid, exit_handler(boxed))) return give_up("it has exited");
    pid_ = record.pid;
    forked_ = record.forked;
    cgroup_name_ = record.cgroup;
    log_.info("adopted " + spec_.name + " kernel, pid " + std::to_string(pid_) +
              (sandbox_ ? " (sandboxed as uid " + std::to_string(*record.uid) + ")" : "") +
              ", left running by an earlier gateway");
    // No ready timeout: kernel_info is answered on the shell channel, after the cell the
    // kernel may still be running from before the restart, however long it takes. Its
    // heartbeat says whether it is alive meanwhile (--heartbeat-timeout).
    tell([](observer& o) { o.on_sockets_ready(); });
    return {};
}

kernel_record kernel_process::record() const {
    kernel_record r;
    r.id = id_;
    r.kernelspec = spec_.name;
    r.env = extra_env_;
    r.pid = pid_;
    r.start_ticks = launcher::process_start_ticks(pid_).value_or(0);
    r.forked = forked_;
    r.egress_allow = egress_.allow;
    if (runtime_dir_) {
        r.runtime_dir = runtime_dir_->path();
        r.connection = runtime_dir_->connection();
    }
    if (sandbox_) {
        r.uid = sandbox_->identity().uid;
        r.cgroup = cgroup_name_;
        r.workdir = sandbox_->workdir();
    }
    return r;
}

// A sandboxed kernel owns its ipc directory until its sockets exist; only after seal() has
// taken the directory back and checked each socket may the reactor connect (a kernel could
// otherwise plant a symlink to a host socket). Polled on the strand: a few lstat calls.
void kernel_process::await_sockets(
    pid_t pid, std::optional<std::chrono::steady_clock::time_point> sockets_seen) {
    if (pid_ != pid || !runtime_dir_) return;  // exited, stopped or restarted meanwhile
    // ipykernel rewrites its connection file just after binding; seal after that, or after
    // 2 s for kernels that never rewrite it.
    const auto now = std::chrono::steady_clock::now();
    if (!sockets_seen && runtime_dir_->ipc_sockets_present()) sockets_seen = now;
    const bool ready = sockets_seen && (runtime_dir_->connection_file_rewritten() ||
                                        now - *sockets_seen > std::chrono::seconds(2));
    if (!ready) {
        auto timer = std::make_shared<asio::steady_timer>(strand_, std::chrono::milliseconds(5));
        timer->async_wait(
            [weak = weak_from_this(), timer, pid, sockets_seen](boost::system::error_code ec) {
                if (ec) return;
                if (auto self = weak.lock()) self->await_sockets(pid, sockets_seen);
            });
        return;
    }
    if (auto problem = runtime_dir_->seal(sandbox_->identity().uid); !problem.empty()) {
        const std::string why = "kernel failed the ipc socket check: " + problem;
        log_.warn(why);
        tell([&](observer& o) { o.on_socket_check_failed(why); });
        return;
    }
    if (!egress_.empty()) {
        // The jail exists and the kernel has run none of its user's code: its way out is
        // opened now, before it is declared ready, so the first cell finds it.
        if (auto why = open_egress(pid); !why.empty()) {
            log_.warn(why);
            tell([&](observer& o) { o.on_socket_check_failed(why); });
            return;
        }
    }
    tell([](observer& o) { o.on_sockets_ready(); });
}

std::string kernel_process::open_egress(pid_t pid) {
    // The jail's outermost process is found breadth first from `pid` (a zygote's fork, or
    // bwrap's one child): nothing the kernel's code starts later comes before it, so an
    // adopted kernel's listener goes where its first one was.
    auto ns = launcher::open_jail_network(pid);
    if (auto* ec = std::get_if<std::error_code>(&ns))
        return "kernel egress failed to open: cannot find the kernel's network namespace: " +
               ec->message();
    auto opened = env_.egress->open(id_, egress_, std::get<unique_fd>(ns).get());
    if (auto* error = std::get_if<std::string>(&opened))
        return "kernel egress failed to open: " + *error;
    egress_open_ = std::move(std::get<std::shared_ptr<void>>(opened));
    return {};
}

bool kernel_process::may_auto_restart() {
    if (env_.settings.autorestart_limit == 0) return false;
    const auto now = std::chrono::steady_clock::now();
    while (!auto_restarts_.empty() &&
           now - auto_restarts_.front() > env_.settings.autorestart_window)
        auto_restarts_.pop_front();
    if (auto_restarts_.size() >= env_.settings.autorestart_limit) return false;
    auto_restarts_.push_back(now);
    return true;
}

void kernel_process::on_exit(pid_t pid, const launcher::exit_status& status) {
    if (pid != pid_) return;
    pid_ = 0;
    egress_open_.reset();  // its namespace is gone with it
    if (on_gone_) {        // we asked it to stop
        stop_timer_.cancel();
        auto then = std::move(on_gone_);
        on_gone_ = nullptr;
        then();
        return;
    }
    // It died on its own: a crash, a kill from outside, an OOM kill. What it wrote last
    // (a traceback, the sandbox's complaint) says why better than the exit status; it is all
    // in the pipe by now, though not necessarily read yet.
    last_words_.clear();
    if (output_) {
        output_->drain();
        if (auto tail = output_->tail(); !tail.empty())
            log_.warn("the kernel's last output:\n" + tail);
        last_words_ = output_->last_words(max_last_words);
    }
    tell([&](observer& o) { o.on_exit(status); });
}

void kernel_process::release() {
    ready_timer_.cancel();
    egress_open_.reset();
    if (output_) output_->stop();
    output_.reset();
    runtime_dir_.reset();
}

void kernel_process::signal_group(int sig) {
    if (pid_ > 0) env_.processes.signal_group(pid_, sig);
}

void kernel_process::interrupt() {
    if (pid_ <= 0) return;
    if (sandboxed() && !forked_)
        env_.processes.signal_child_groups(pid_, SIGINT);
    else
        env_.processes.signal_group(pid_, SIGINT);
}

void kernel_process::stop(bool asked, std::function<void()> then) {
    if (pid_ <= 0) {
        then();
        return;
    }
    on_gone_ = std::move(then);
    const pid_t pid = pid_;
    if (!asked) {
        log_.debug("terminating the kernel (SIGTERM) without asking it to exit");
        env_.processes.terminate(pid, env_.settings.kill_grace);
        return;
    }
    stop_timer_.expires_after(env_.settings.shutdown_wait);
    stop_timer_.async_wait([weak = weak_from_this(), pid](boost::system::error_code ec) {
        if (ec) return;
        auto self = weak.lock();
        if (!self || self->pid_ != pid) return;
        self->log_.info("kernel did not exit after shutdown_request; sending SIGTERM");
        self->env_.processes.terminate(pid, self->env_.settings.kill_grace);
    });
}

}  // namespace callisto::gateway::kernels
