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
      apis_(ioc_, config_, runtime_, state_, log_),
      auth_(config_.users_file.empty() ? user_directory(token_auth(config_.token))
                                       : user_directory(config_.users_file)),
      users_watch_(ioc_),
      requests_(metrics_, log_.component("access")),
      connections_(config_.max_connections, config_.max_connections_per_address),
      request_bodies_(config_.max_body_bytes_in_flight),
      readiness_(runtime_.kernels(), runtime_.sandboxed(), runtime_.host()),
      drain_timer_(ioc_),
      services_{config_,
                auth_,
                runtime_.kernels(),
                apis_.kernels_rest(),
                apis_.kernelspecs_rest(),
                sessions_,
                connections_,
                request_bodies_,
                readiness_,
                log_.component("http"),
                apis_.interpreter_rest(),
                apis_.mcp(),
                metrics_,
                apis_.admin_rest(),
                runtime_.host(),
                apis_.e2b()},
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
    // Bound before anything is written: a taken port leaves no runtime directory behind.
    listener_ = make_listener(ioc_, config_, http_);
    // After the listener: its port (perhaps picked by the system) is one no egress rule opens.
    runtime_.start_egress(listener_->local_endpoint());
    report_web_root();
    runtime_.take_over_host();
    // After the adopted kernels are registered (they may still be connecting).
    apis_.restore_contexts();
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
    apis_.start(ioc_);
    if (auth_.has_file()) watch_users_file();

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
        apis_.close_sessions_of(changed);
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
    drain_timer_.cancel();
    readiness_.begin_drain();
    sessions_.close_all();
    // MCP sessions end with the server: their contexts go before the kernels do, and their
    // kernels are shut down rather than reset for a reuse that will not come.
    apis_.stop();
    runtime_.shut_down([this] { asio::post(ioc_, [this] { finish_stop(); }); });
}

void server::finish_stop() {
    apis_.remove_contexts();  // their kernels are gone; their directories go now
    // No kernel is left; what remains are client connections finishing their close.
    sessions_.close_all();
    boost::system::error_code ignored;
    signals_.cancel(ignored);
    work_.reset();
}

}  // namespace callisto::gateway
