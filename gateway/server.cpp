#include "gateway/server.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <boost/asio/post.hpp>

#include "gateway/host_defaults.hpp"
#include "gateway/http/listener.hpp"
#include "gateway/kernel_adoption.hpp"
#include "gateway/mcp/context_tools.hpp"
#include "gateway/metrics/gateway_metrics.hpp"
#include "gateway/metrics/process_metrics.hpp"
#include "gateway/routes.hpp"
#include "launcher/kernelspec/kernelspec_check.hpp"
#include "launcher/sandbox/cgroup_move_timer.hpp"
#include "launcher/sandbox/leftover_reaper.hpp"
#include "launcher/sandbox/sandbox_probe.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

// The zygotes fork kernels from callisto-zygote, beside this binary unless configured.
std::unique_ptr<launcher::zygote_pool> make_zygote_pool(const server_config& config,
                                                        launcher::process_supervisor& supervisor,
                                                        logger log) {
    if (!config.zygote) return nullptr;
    auto program = config.zygote_program;
    if (program.empty()) {
        std::error_code ec;
        program = fs::read_symlink("/proc/self/exe", ec).parent_path() / "callisto-zygote";
    }
    if (::access(program.c_str(), X_OK) != 0) {
        log.warn("no zygote program at " + program.string() +
                 "; every kernel starts its own interpreter");
        return nullptr;
    }
    launcher::zygote_settings settings{program, launcher::zygote_pool::built_python(),
                                       config.kernels.runtime_root};
    return std::make_unique<launcher::zygote_pool>(supervisor, std::move(settings), std::move(log));
}

// A --kernel-dir that does not exist, or a --default-kernel or --pool no directory provides,
// is a typo: refused at start, naming what exists, instead of failing at the first kernel or
// leaving a pool empty.
void check_kernel_options(const server_config& config,
                          const launcher::kernelspec_catalog& catalog) {
    for (const auto& dir : config.kernel_dirs)
        if (!fs::is_directory(dir))
            throw std::runtime_error("--kernel-dir=" + dir.string() + ": no such directory");
    auto unknown = [&catalog](const std::string& option, const std::string& name) {
        if (auto why = catalog.refusal(name))
            return std::runtime_error(option + ": kernelspec " + name + " is not offered: " + *why);
        std::string names;
        for (const auto& spec : catalog.all()) names += (names.empty() ? "" : ", ") + spec.name;
        return std::runtime_error(
            option + ": no such kernelspec (found: " + (names.empty() ? "none" : names) +
            "; --kernel-dir adds a directory of kernelspecs)");
    };
    if (!config.kernels.default_kernel.empty() && !catalog.find(config.kernels.default_kernel))
        throw unknown("--default-kernel=" + config.kernels.default_kernel,
                      config.kernels.default_kernel);
    for (const auto& [name, size] : config.pool_sizes)
        if (!catalog.find(name)) throw unknown("--pool=" + name + ":" + std::to_string(size), name);
    for (const auto& t : config.e2b_templates)
        if (!catalog.find(t.kernelspec))
            throw unknown("--e2b-template=" + e2b::format_sandbox_template(t), t.kernelspec);
}

// A kernelspec is offered only when its interpreter runs where its kernels will
// (launcher/kernelspec/kernelspec_check.hpp); an environment may show none of the gateway's own
// files.
launcher::kernelspec_catalog::check_fn kernelspec_check_for(const server_config& config,
                                                            const launcher::sandbox* box) {
    launcher::kernelspec_check_settings s;
    s.box = box;
    s.who = {config.sandbox_uid_first, config.sandbox_uid_first};
    for (const auto& path :
         {config.kernels.workdir_root, config.kernels.runtime_root, config.state_dir,
          config.users_file, config.audit.file, config.audit.key_file, config.certfile,
          config.keyfile, config.client_ca, config.interpreter.snapshot_dir})
        if (!path.empty()) s.private_paths.push_back(path);
    return [s](const launcher::kernelspec& spec) { return launcher::kernelspec_problem(spec, s); };
}

// Binds the listening socket; a failure names the address and the way out.
std::shared_ptr<listener> make_listener(asio::io_context& ioc, const server_config& config,
                                        http_services& services) {
    const std::string where = config.ip + ":" + std::to_string(config.port);
    try {
        const auto address = asio::ip::make_address(config.ip);
        return std::make_shared<listener>(ioc, asio::ip::tcp::endpoint(address, config.port),
                                          services);
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("cannot listen on " + where + ": " + e.code().message() +
                                 (e.code() == asio::error::address_in_use
                                      ? " (another server there? --port=0 picks a free port)"
                                      : ""));
    }
}

// Every sandboxed kernel start waits for one move into a cgroup: the log says how long that
// takes here, and how to shorten it when it waits for an RCU grace period.
void report_cgroup_move_time(const launcher::cgroup_layout& cgroups, const std::string& tag,
                             const logger& log) {
    if (cgroups.version == launcher::cgroup_version::none) return;
    const auto timing = launcher::time_cgroup_move(
        cgroups, (tag.empty() ? "pid" + std::to_string(::getpid()) : tag) + "-move-timer");
    if (!timing.error.empty()) {
        log.warn("could not time a move into a cgroup: " + timing.error);
        return;
    }
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.2f", timing.median_ms);
    const std::string figure =
        std::string("moving a process into its cgroups takes ") + ms + " ms here";
    if (timing.median_ms <= launcher::slow_cgroup_move_ms) {
        log.info(figure);
        return;
    }
    log.warn(figure +
             ", and every kernel start waits for one: the host does not favour dynamic cgroup "
             "changes. Mounting cgroup2 with favordynmods (mount -o remount,favordynmods on its "
             "mount) or a kernel built with CONFIG_CGROUP_FAVOR_DYNMODS makes it about 0.5 ms; "
             "see docs/operations.md, \"Host tuning\"");
}

// Appended, once, to every refusal for want of a sandbox.
constexpr const char* sandbox_off_note =
    "; --sandbox=off starts without the sandbox, for development only: kernel code then runs "
    "as this user, with its files and network";

// What the sandbox needs of this process, checked before any directory is made or changed:
// a user without root is told that, not what the first chmod of the workdir root said.
server_config checked_before_start(server_config config) {
    if (!config.sandbox) return config;
    if (auto problem = launcher::sandbox_probe::privilege_problem(::geteuid()); !problem.empty())
        throw std::runtime_error(problem + sandbox_off_note);
    return config;
}

// Probes the host; throws with the probe's explanation when no safe mode exists.
std::unique_ptr<launcher::sandbox> make_sandbox(const server_config& config,
                                                const launcher::instance_lock* lock,
                                                const logger& log) {
    if (!config.sandbox) {
        log.warn("**********************************************************************");
        log.warn("SANDBOX OFF (--sandbox=off): kernel code runs as this user with full");
        log.warn("network, file and process access. For development only.");
        log.warn("**********************************************************************");
        return nullptr;
    }
    auto probe = launcher::sandbox_probe::run(config.bwrap, config.sandbox_uid_first);
    if (!probe.usable()) throw std::runtime_error(probe.describe() + sandbox_off_note);
    // The runtime root itself is made searchable at start (prepare_runtime_root); what lies
    // above it, and the workdir root, are the operator's.
    for (const auto& [dir, option] :
         {std::pair{config.kernels.workdir_root, "--workdir-root"},
          std::pair{config.kernels.runtime_root.parent_path(), "--runtime-dir's parent"}})
        if (auto why = launcher::sandbox_probe::unreachable_by_sandbox(dir, option); !why.empty())
            throw std::runtime_error(why);
    log.info(probe.describe());
    log.info("sandbox limits per kernel: " + config.kernels.limits.describe() + "; uids " +
             std::to_string(config.sandbox_uid_first) + "-" +
             std::to_string(config.sandbox_uid_first + config.sandbox_uid_count - 1) +
             "; workdirs under " + config.kernels.workdir_root.string());
    report_cgroup_move_time(probe.cgroups, lock ? lock->tag() : "", log);
    return std::make_unique<launcher::sandbox>(probe.bwrap, probe.cgroups, lock ? lock->tag() : "");
}

// --pool-size applies to the default kernelspec; --pool=NAME:N entries win over it. Each E2B
// template's pool adds its ready kernels to its kernelspec's.
std::map<std::string, std::size_t> pool_sizes(const server_config& config,
                                              const launcher::kernelspec_catalog& catalog) {
    auto sizes = config.pool_sizes;
    const std::string name = config.kernels.default_kernel.empty() ? catalog.default_name()
                                                                   : config.kernels.default_kernel;
    if (!name.empty() && !sizes.count(name)) sizes[name] = config.default_pool_size;
    for (const auto& t : config.e2b_templates)
        if (t.pool) sizes[t.kernelspec] += t.pool;
    return sizes;
}

// The kernels' settings as given, with what follows from the sandbox.
kernels::kernel_settings kernel_settings_for(const server_config& config) {
    kernels::kernel_settings s = config.kernels;
    s.ask_before_removing = !config.sandbox;
    return s;
}

// The interpreter's settings as given, with the server's services and what follows from the
// sandbox, the state directory and the other options.
interpreter::interpreter_settings interpreter_settings_for(
    const server_config& config, audit::audit_log* audit, kernels::kernel_metrics& metrics,
    interpreter::context_record_store* records, interpreter::paused_record_store* paused) {
    interpreter::interpreter_settings s = config.interpreter;
    s.audit = audit;
    s.metrics = &metrics;
    s.context_records = records;
    s.paused_records = paused;
    s.egress_allow = config.egress_allow;
    // Sandboxed kernels already run in their session workdir, <workdir_root>/<kernel id>.
    if (config.sandbox) s.kernel_workdir_root = config.kernels.workdir_root;
    // Unsandboxed contexts get a directory of their own: under the state directory when there
    // is one (it outlives this process, as the contexts do), else in the runtime root.
    s.context_root = config.state_dir.empty() ? config.kernels.runtime_root / "contexts"
                                              : config.state_dir / "workdirs";
    // Snapshots outlive the process as the state directory does; without one (--sandbox=off,
    // --state-dir=off) they last as long as the runtime root.
    if (s.snapshot_dir.empty())
        s.snapshot_dir = config.state_dir.empty() ? config.kernels.runtime_root / "snapshots"
                                                  : config.state_dir / "snapshots";
    // Paused contexts' states stay with this server's records (never shared between replicas
    // as --snapshot-dir may be): in the state directory, which outlives a reboot.
    s.paused_snapshot_dir = config.state_dir.empty()
                                ? config.kernels.runtime_root / "paused-snapshots"
                                : config.state_dir / "paused-snapshots";
    // A request may ask for a smaller budget than --output-budget, never a larger one.
    s.request_limits.max_output_budget = s.text_budget_bytes;
    s.max_download_bytes = std::max(s.max_download_bytes, s.max_upload_bytes);
    s.culled_retention = config.culling.retention;
    return s;
}

mcp::tool_limits mcp_tool_limits(const interpreter::interpreter_settings& s) {
    mcp::tool_limits limits;
    limits.max_code_bytes = s.request_limits.max_code_bytes;
    // An agent's tool call keeps its own, shorter default (a model waits on it), within the
    // server's bounds.
    limits.max_timeout = std::min(limits.max_timeout, s.request_limits.max_timeout);
    if (s.request_limits.default_timeout.count() > 0)
        limits.default_timeout = std::min(limits.default_timeout, s.request_limits.default_timeout);
    limits.default_timeout = std::min(limits.default_timeout, limits.max_timeout);
    limits.max_output_budget = s.text_budget_bytes;
    limits.default_output_budget = std::min(limits.default_output_budget, s.text_budget_bytes);
    // A file travels base64 inside one JSON body: keep that body a sensible size; larger
    // files go through PUT /v1/contexts/{id}/files/{path}.
    limits.max_upload_bytes = std::min<std::size_t>(s.max_upload_bytes, 16u << 20);
    return limits;
}

std::vector<std::string> kernelspec_names(const launcher::kernelspec_catalog& catalog) {
    std::vector<std::string> names;
    for (const auto& spec : catalog.all()) names.push_back(spec.name);
    return names;
}

// E2B's sandboxes live within the interpreter's bounds: env_vars as /v1's env.
e2b::e2b_settings e2b_settings_for(const interpreter::interpreter_settings& s,
                                   const server_config& config) {
    e2b::e2b_settings e;
    e.domain = config.e2b_domain;
    e.templates = config.e2b_templates;
    e.limits.env = s.request_limits.env;
    e.limits.max_timeout = s.request_limits.max_timeout;
    std::error_code ec;
    e.enter_program = fs::read_symlink("/proc/self/exe", ec).parent_path() / "callisto-enter";
    return e;
}

}  // namespace

server::server(server_config config, logger log)
    : config_(with_web_root(checked_before_start(std::move(config)))),
      log_(std::move(log)),
      tls_(config_.certfile.empty() ? nullptr
                                    : std::make_unique<tls_context>(tls_files{
                                          config_.certfile, config_.keyfile, config_.client_ca})),
      kernel_metrics_(metrics_),
      host_load_(
          host_load_thresholds{
              .cpu_pressure_percent = static_cast<double>(config_.shed_cpu_pressure),
              .run_queue_per_cpu = static_cast<double>(config_.shed_run_queue),
              .lag = std::chrono::milliseconds(config_.shed_lag_ms)},
          config_.shed_load),
      directories_(config_, log_),
      state_(config_, log_),
      work_(asio::make_work_guard(ioc_)),
      signals_(ioc_, SIGINT, SIGTERM, SIGHUP),
      reactor_(log_.component("reactor")),
      supervisor_(log_.component("supervisor")),
      zygotes_(make_zygote_pool(config_, supervisor_, log_.component("zygote"))),
      kernel_links_(reactor_),
      kernel_processes_(supervisor_, zygotes_.get()),
      sandbox_(make_sandbox(config_, directories_.workdir_lock(), log_.component("sandbox"))),
      catalog_(kernel_search_path(config_), log_.component("kernelspecs"),
               kernelspec_check_for(config_, sandbox_.get())),
      sandbox_uids_(sandbox_ ? std::make_unique<launcher::sandbox_uid_pool>(
                                   config_.sandbox_uid_first, config_.sandbox_uid_count)
                             : nullptr),
      kernel_env_{ioc_,
                  kernel_links_,
                  kernel_processes_,
                  kernel_metrics_,
                  kernel_settings_for(config_),
                  log_.component("kernel"),
                  sandbox_.get(),
                  sandbox_uids_.get(),
                  state_.kernel_records(),
                  state_.websocket_audit(),
                  &host_load_},
      kernels_(kernel_env_, catalog_, config_.culling, pool_sizes(config_, catalog_),
               config_.max_kernels, config_.reuse),
      kernels_rest_(kernels_),
      kernelspecs_rest_(catalog_, kernels_.default_kernel_name()),
      contexts_(ioc_, kernels_,
                interpreter_settings_for(config_, state_.audit(), kernel_metrics_,
                                         state_.context_records(), state_.paused_records()),
                log_.component("interpreter")),
      interpreter_rest_(contexts_),
      mcp_sessions_(
          [this](const user& owner, const std::string&) -> std::shared_ptr<mcp::tool_backend> {
              return std::make_shared<mcp::context_tools>(
                  contexts_, interpreter_rest_, owner,
                  std::min<std::size_t>(contexts_.settings().max_download_bytes, 16u << 20),
                  log_.component("mcp"));
          },
          config_.mcp, log_.component("mcp")),
      mcp_(mcp_sessions_, mcp_tool_limits(contexts_.settings()), CALLISTO_VERSION),
      e2b_(ioc_, contexts_, kernelspec_names(catalog_),
           e2b_settings_for(contexts_.settings(), config_), log_.component("e2b")),
      auth_(config_.users_file.empty() ? user_directory(token_auth(config_.token))
                                       : user_directory(config_.users_file)),
      users_watch_(ioc_),
      requests_(metrics_, log_.component("access")),
      connections_(config_.max_connections, config_.max_connections_per_address),
      request_bodies_(config_.max_body_bytes_in_flight),
      trimmer_(ioc_, std::chrono::seconds(10)),
      load_sampler_(
          ioc_, host_load_, metrics_, [this] { return kernels_.list().size(); },
          log_.component("load")),
      // An hour of 10 s samples for the admin console's chart.
      activity_(std::chrono::seconds(10), 360),
      activity_sampler_(ioc_, activity_, [this] { return sample_activity(); }),
      admin_rest_(kernels_, state_.audit(), activity_,
                  {CALLISTO_VERSION, std::chrono::system_clock::now(), sandbox_ != nullptr},
                  network_source(), sandbox_source()),
      readiness_(kernels_, sandbox_ != nullptr, host_load_),
      drain_timer_(ioc_),
      services_{config_,           auth_,
                kernels_,          kernels_rest_,
                kernelspecs_rest_, sessions_,
                connections_,      request_bodies_,
                readiness_,        log_.component("http"),
                interpreter_rest_, mcp_,
                metrics_,          admin_rest_,
                host_load_,        e2b_},
      dispatcher_(auth_, config_.max_request_body_bytes,
                  "which is fixed; larger data goes up as a file, up to --upload-limit: PUT "
                  "/v1/contexts/{id}/files/{path} or a multipart POST to .../files"),
      http_{dispatcher_, connections_,           request_bodies_,        sessions_,
            requests_,   config_.header_timeout, log_.component("http"), tls_.get()} {
    check_kernel_options(config_, catalog_);
    signals_.add(SIGUSR2);
    register_gateway_metrics(metrics_, kernels_, catalog_, sessions_);
    for (const auto& spec : catalog_.all()) kernel_metrics_.known_kernelspec(spec.name);
    if (state_.kernel_records())
        register_state_metrics(metrics_, *state_.kernel_records(), *state_.context_records());
    register_process_metrics(metrics_);
    register_routes(dispatcher_, services_);
    e2b_.start();
    // Bound before anything is written: a taken port leaves no runtime directory behind.
    listener_ = make_listener(ioc_, config_, http_);
    if (sandbox_ && !config_.egress_allow.empty()) {
        // After the listener: its port (perhaps picked by the system) is one no rule opens.
        kernel_egress_settings es;
        es.proxy.max_connections = config_.egress_connections;
        es.proxy.bytes_per_second = config_.egress_bytes_per_second;
        const auto own = listener_->local_endpoint();
        const auto text = own.address().to_string();
        auto address = own.address().is_v4() ? egress::parse_ipv4(text) : egress::parse_ipv6(text);
        if (address) es.own_endpoints.emplace_back(*address, own.port());
        egress_ = std::make_unique<kernel_egress>(
            ioc_.get_executor(), std::move(es), state_.audit(), metrics_, log_.component("egress"));
        kernel_env_.egress = egress_.get();
        log_.info("egress: kernels may ask for destinations within --egress-allow (" +
                  std::to_string(config_.egress_allow.size()) + " rules)");
    }
    std::optional<kernel_adoption> adoption;
    if (state_.kernel_records())
        adoption.emplace(*state_.kernel_records(), log_.component("adoption"));
    directories_.take_over(sandbox_.get(), adoption ? &*adoption : nullptr);
    if (catalog_.all().empty())
        log_.warn("no kernelspecs found; install python3-ipykernel or pass --kernel-dir");
    for (const auto& spec : catalog_.all())
        log_.info("kernelspec " + spec.name + " from " + spec.resource_dir.string());
    report_web_root();
    // After the runtime root exists: the zygotes' scratch directories go there.
    if (zygotes_) zygotes_->start(catalog_.all());
    // Egress only with the sandbox: without it the ceiling is empty for adopted kernels too.
    if (adoption)
        adoption->adopt_into(kernels_, sandbox_uids_.get(),
                             egress_ ? config_.egress_allow : std::vector<std::string>{});
    // After the adopted kernels are registered (they may still be connecting).
    if (state_.context_records()) contexts_.restore(*state_.context_records());
    // After them: a context a crash left both live and paused is taken as paused.
    interpreter_rest_.start();
}

server::~server() = default;

// The URL printed at start answers a JSON 404 without a web UI: say so, and where it was
// looked for.
void server::report_web_root() const {
    if (!config_.web_root.empty()) {
        log_.info("web UI at / from " + config_.web_root.string());
        return;
    }
    if (config_.web_root_off) {
        log_.info("no web UI (--web-root=off): / answers 404");
        return;
    }
    std::string looked;
    for (const auto& dir : web_root_candidates())
        looked += (looked.empty() ? "" : ", ") + dir.string();
    log_.warn("no web UI found (no index.html in " + looked +
              "): / answers 404; --web-root=DIR serves one");
}

asio::ip::tcp::endpoint server::local_endpoint() const { return listener_->local_endpoint(); }

void server::run() {
    wait_for_signal();
    listener_->run();
    kernels_.start();
    mcp_sessions_.start_expiry(ioc_);
    if (auth_.has_file()) watch_users_file();
    trimmer_.start();
    load_sampler_.start();
    activity_sampler_.start();

    std::vector<std::thread> threads;
    for (int i = 1; i < config_.threads; ++i) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : threads) t.join();
    reactor_.stop();
    log_.info("stopped");
}

void server::wait_for_signal() {
    signals_.async_wait([this](boost::system::error_code ec, int sig) {
        if (!ec) on_signal(sig);
    });
}

void server::on_signal(int sig) {
    if (sig == SIGHUP) {
        reload_certificate();
        if (auth_.has_file()) reload_users("received SIGHUP");
        return wait_for_signal();
    }
    const std::string name = sig == SIGINT ? "SIGINT" : sig == SIGUSR2 ? "SIGUSR2" : "SIGTERM";
    if (sig == SIGUSR2 || (sig == SIGTERM && config_.keep_kernels_on_exit)) {
        if (state_.kernel_records()) leave_kernels_running(name);
        log_.warn("received " + name +
                  "; ignored: without --state-dir no kernel outlives the "
                  "gateway");
        return wait_for_signal();
    }
    // First not ready for --drain-seconds, so a load balancer sends new users elsewhere while
    // the connected ones finish; a second signal stops at once.
    if (config_.drain_seconds.count() > 0 && !readiness_.draining()) {
        log_.info("received " + name + "; not ready (draining) for " +
                  std::to_string(config_.drain_seconds.count()) + " s, then shutting down");
        readiness_.begin_drain();
        drain_timer_.expires_after(config_.drain_seconds);
        drain_timer_.async_wait([this](boost::system::error_code ec) {
            if (!ec) request_stop();
        });
        return wait_for_signal();
    }
    log_.info("received " + name + "; shutting down");
    request_stop();
}

// New connections get the new certificate; open ones keep theirs. A file that cannot be read
// leaves the one in use.
void server::reload_certificate() {
    if (!tls_) return log_.info("received SIGHUP; nothing to reload (no --certfile)");
    try {
        tls_->reload();
        log_.info("received SIGHUP; reloaded the TLS certificate from " +
                  config_.certfile.string());
    } catch (const std::exception& e) {
        log_.error("received SIGHUP; kept the TLS certificate in use: " + std::string(e.what()));
    }
}

void server::reload_users(const std::string& why) {
    try {
        const auto changed = auth_.reload();
        std::string names;
        for (const auto& name : changed) names += (names.empty() ? "" : ", ") + name;
        log_.info(why + "; reloaded the users file " + auth_.file().string() +
                  (changed.empty() ? "" : "; closing the connections of " + names));
        if (changed.empty()) return;
        sessions_.close_of_users(changed);
        mcp_sessions_.close_of_users(changed);
    } catch (const std::exception& e) {
        log_.error(why + "; kept the users in effect: " + std::string(e.what()));
    }
}

// A users file edited in place or replaced (an atomic rename) takes effect without a signal.
void server::watch_users_file() {
    users_watch_.expires_after(std::chrono::seconds(2));
    users_watch_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        if (auth_.file_changed()) reload_users("the users file changed");
        watch_users_file();
    });
}

void server::leave_kernels_running(const std::string& signal_name) {
    log_.info("received " + signal_name + "; exiting now and leaving " +
              std::to_string(kernels_.list().size()) +
              " kernels running for the next start to adopt (records in " +
              config_.state_dir.string() + ")");
    // No destructor runs: they would stop the kernels and remove their directories. What the
    // next start needs is on disk; the zygotes die with us (their death signal), the kernels
    // do not. Client connections close with the process.
    std::fflush(nullptr);
    std::_Exit(0);
}

void server::request_stop() {
    if (stopping_.exchange(true)) return;
    asio::post(ioc_, [this] { begin_stop(); });
}

void server::begin_stop() {
    listener_->stop();
    trimmer_.stop();
    load_sampler_.stop();
    users_watch_.cancel();
    activity_sampler_.stop();
    drain_timer_.cancel();
    readiness_.begin_drain();
    sessions_.close_all();
    // MCP sessions end with the server: their contexts go before the kernels do, and their
    // kernels are shut down rather than reset for a reuse that will not come.
    e2b_.stop();
    if (egress_) egress_->stop();
    interpreter_rest_.stop();
    contexts_.stop();
    mcp_sessions_.close_all();
    kernels_.shutdown_all([this] { asio::post(ioc_, [this] { finish_stop(); }); });
}

admin::activity_sample server::sample_activity() const {
    admin::activity_sample sample;
    sample.at = std::chrono::system_clock::now();
    for (const auto& k : kernels_.list()) {
        ++sample.kernels;
        if (k->activity().execution_state == "busy") ++sample.busy;
    }
    double executions = 0;
    kernel_metrics_.executions.for_each(
        [&](const auto&, const metrics::counter& c) { executions += c.value(); });
    sample.executions_total = static_cast<std::uint64_t>(executions);
    return sample;
}

admin::network_source server::network_source() {
    if (!sandbox_ || config_.egress_allow.empty()) return {};
    // egress_ is made in the constructor's body, before any request is served.
    return [this] {
        std::vector<admin::kernel_network> out;
        if (!egress_) return out;
        for (auto& k : egress_->activity())
            out.push_back({std::move(k.kernel_id), std::move(k.allow), k.counts.allowed,
                           k.counts.refused, k.counts.open, k.counts.bytes_up,
                           k.counts.bytes_down});
        return out;
    };
}

admin::sandbox_source server::sandbox_source() {
    return [this] {
        std::vector<admin::e2b_sandbox> out;
        for (auto& [box, commands] : e2b_.all_sandboxes()) {
            admin::e2b_sandbox view{box.id,     box.owner.name, box.template_id,
                                    box.kernel, box.started_at, box.end_at,
                                    {},         commands};
            for (const auto& c : box.contexts) view.context_ids.push_back(c.id);
            out.push_back(std::move(view));
        }
        return out;
    };
}

void server::finish_stop() {
    contexts_.remove_all();  // their kernels are gone; their directories go now
    // No kernel is left; what remains are client connections finishing their close.
    sessions_.close_all();
    boost::system::error_code ignored;
    signals_.cancel(ignored);
    work_.reset();
}

}  // namespace callisto::gateway
