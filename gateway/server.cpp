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
    : config_(with_web_root(kernel_runtime::checked_before_start(std::move(config)))),
      log_(std::move(log)),
      tls_(config_.certfile.empty() ? nullptr
                                    : std::make_unique<tls_context>(tls_files{
                                          config_.certfile, config_.keyfile, config_.client_ca})),
      directories_(config_, log_),
      state_(config_, log_),
      work_(asio::make_work_guard(ioc_)),
      signals_(ioc_, SIGINT, SIGTERM, SIGHUP),
      runtime_(ioc_, config_, metrics_, directories_, state_, log_),
      kernels_rest_(runtime_.kernels()),
      kernelspecs_rest_(runtime_.catalog(), runtime_.kernels().default_kernel_name()),
      contexts_(ioc_, runtime_.kernels(),
                interpreter_settings_for(config_, state_.audit(), runtime_.metrics(),
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
      e2b_(ioc_, contexts_, kernelspec_names(runtime_.catalog()),
           e2b_settings_for(contexts_.settings(), config_), log_.component("e2b")),
      auth_(config_.users_file.empty() ? user_directory(token_auth(config_.token))
                                       : user_directory(config_.users_file)),
      users_watch_(ioc_),
      requests_(metrics_, log_.component("access")),
      connections_(config_.max_connections, config_.max_connections_per_address),
      request_bodies_(config_.max_body_bytes_in_flight),
      // An hour of 10 s samples for the admin console's chart.
      activity_(std::chrono::seconds(10), 360),
      activity_sampler_(ioc_, activity_, [this] { return sample_activity(); }),
      admin_rest_(runtime_.kernels(), state_.audit(), activity_,
                  {CALLISTO_VERSION, std::chrono::system_clock::now(), runtime_.sandboxed()},
                  network_source(), sandbox_source()),
      readiness_(runtime_.kernels(), runtime_.sandboxed(), runtime_.host()),
      drain_timer_(ioc_),
      services_{config_,
                auth_,
                runtime_.kernels(),
                kernels_rest_,
                kernelspecs_rest_,
                sessions_,
                connections_,
                request_bodies_,
                readiness_,
                log_.component("http"),
                interpreter_rest_,
                mcp_,
                metrics_,
                admin_rest_,
                runtime_.host(),
                e2b_},
      dispatcher_(auth_, config_.max_request_body_bytes,
                  "which is fixed; larger data goes up as a file, up to --upload-limit: PUT "
                  "/v1/contexts/{id}/files/{path} or a multipart POST to .../files"),
      http_{dispatcher_, connections_,           request_bodies_,        sessions_,
            requests_,   config_.header_timeout, log_.component("http"), tls_.get()} {
    signals_.add(SIGUSR2);
    register_gateway_metrics(metrics_, runtime_.kernels(), runtime_.catalog(), sessions_);
    if (state_.kernel_records())
        register_state_metrics(metrics_, *state_.kernel_records(), *state_.context_records());
    register_process_metrics(metrics_);
    register_routes(dispatcher_, services_);
    e2b_.start();
    // Bound before anything is written: a taken port leaves no runtime directory behind.
    listener_ = make_listener(ioc_, config_, http_);
    // After the listener: its port (perhaps picked by the system) is one no egress rule opens.
    runtime_.start_egress(listener_->local_endpoint());
    report_web_root();
    runtime_.take_over_host();
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
    runtime_.start();
    mcp_sessions_.start_expiry(ioc_);
    if (auth_.has_file()) watch_users_file();
    activity_sampler_.start();

    std::vector<std::thread> threads;
    for (int i = 1; i < config_.threads; ++i) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : threads) t.join();
    runtime_.stop_reactor();
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
              std::to_string(runtime_.kernels().list().size()) +
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
    users_watch_.cancel();
    activity_sampler_.stop();
    drain_timer_.cancel();
    readiness_.begin_drain();
    sessions_.close_all();
    // MCP sessions end with the server: their contexts go before the kernels do, and their
    // kernels are shut down rather than reset for a reuse that will not come.
    e2b_.stop();
    interpreter_rest_.stop();
    contexts_.stop();
    mcp_sessions_.close_all();
    runtime_.shut_down([this] { asio::post(ioc_, [this] { finish_stop(); }); });
}

admin::activity_sample server::sample_activity() const {
    admin::activity_sample sample;
    sample.at = std::chrono::system_clock::now();
    for (const auto& k : runtime_.kernels().list()) {
        ++sample.kernels;
        if (k->activity().execution_state == "busy") ++sample.busy;
    }
    double executions = 0;
    runtime_.metrics().executions.for_each(
        [&](const auto&, const metrics::counter& c) { executions += c.value(); });
    sample.executions_total = static_cast<std::uint64_t>(executions);
    return sample;
}

admin::network_source server::network_source() {
    if (!runtime_.egress_enabled()) return {};
    // The egress proxy is made in the constructor's body, before any request is served.
    return [this] {
        std::vector<admin::kernel_network> out;
        auto* egress = runtime_.egress();
        if (!egress) return out;
        for (auto& k : egress->activity())
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
