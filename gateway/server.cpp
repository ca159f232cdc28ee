#include "gateway/server.hpp"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>

#include "gateway/host_defaults.hpp"
#include "gateway/metrics/gateway_metrics.hpp"
#include "gateway/metrics/process_metrics.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;

namespace {

// How long the I/O threads may go on closing connections once every kernel has ended.
constexpr std::chrono::seconds io_stop_bound{10};

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
      drain_timer_(ioc_),
      runtime_(ioc_, config_, metrics_, directories_, state_, log_),
      apis_(ioc_, config_, runtime_, state_, log_),
      // Binds the listening socket: a taken port leaves no runtime directory behind.
      http_(ioc_, config_, metrics_, runtime_, apis_, tls_.get(), log_) {
    signals_.add(SIGUSR2);
    // The whole gateway's families, after the parts' own: /metrics lists them in registration
    // order (the egress proxy's, made below, come last).
    register_gateway_metrics(metrics_, runtime_.kernels(), runtime_.catalog(), http_.sessions());
    if (state_.kernel_records())
        register_state_metrics(metrics_, *state_.kernel_records(), *state_.context_records());
    register_process_metrics(metrics_);

    // The one cycle between the parts: the egress proxy must know the listener's port
    // (perhaps picked by the system), the one no egress rule may open, yet the kernels reach
    // the proxy and the listener serves the APIs built on the kernels. So the kernel runtime
    // is built without the proxy and given it here, before any kernel starts; the admin
    // console's view of it (api_surfaces) reads it through the runtime when asked.
    runtime_.start_egress(http_.local_endpoint());
    // Then the host is taken over (the runtime root made, a dead instance's leftovers reaped,
    // the zygotes started, the kernels a previous gateway left adopted), and after the adopted
    // kernels are registered (they may still be connecting), the contexts it recorded.
    runtime_.take_over_host();
    apis_.restore_contexts();
}

server::~server() = default;

void server::run() {
    wait_for_signal();
    // Inside out, though nothing runs before the I/O threads do: the kernels (pools, culling,
    // the host's load), the APIs' timers, then the listener.
    runtime_.start();
    apis_.start(ioc_);
    http_.start();

    std::vector<std::thread> threads;
    for (int i = 1; i < config_.threads; ++i) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : threads) t.join();
    if (io_watchdog_.joinable()) {
        io_watchdog_.request_stop();
        io_watchdog_.join();
    }
    // Last: the I/O threads no longer ask it for anything.
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
        http_.reload_users("received SIGHUP");
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
    if (config_.drain_seconds.count() > 0 && !http_.ready().draining()) {
        log_.info("received " + name + "; not ready (draining) for " +
                  std::to_string(config_.drain_seconds.count()) + " s, then shutting down");
        http_.ready().begin_drain();
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

// Outside in: no new connection and the open ones closed; then the APIs' contexts and MCP
// sessions, so what is queued or running ends with "the server is stopping" and their kernels
// are shut down rather than reset for a reuse that will not come; then every kernel. The last
// kernel's end finishes the stop.
void server::begin_stop() {
    drain_timer_.cancel();
    http_.stop();
    apis_.stop();
    runtime_.shut_down([this] { asio::post(ioc_, [this] { finish_stop(); }); });
}

void server::finish_stop() {
    // Every kernel has ended, or the stop's bound passed (kernel_manager::shutdown_all warned).
    log_.info("kernels stopped; closing the connections still open");
    apis_.remove_contexts();  // their kernels are gone; their directories go now
    // What remains are client connections finishing their close.
    http_.close_sessions();
    boost::system::error_code ignored;
    signals_.cancel(ignored);
    work_.reset();
    // Bounded: an operation that never ends (a peer that never finishes its close) must not
    // hold the stop. The I/O threads end by themselves once nothing is left, and run() then
    // ends this watch. Past the bound the process exits as it is: stopping the io_context
    // instead would leave handlers to be destroyed after the parts they refer to.
    io_watchdog_ = std::jthread([this](std::stop_token run_ended) {
        std::mutex mutex;
        std::condition_variable_any woken;
        std::unique_lock lock(mutex);
        if (woken.wait_for(lock, run_ended, io_stop_bound, [] { return false; }) ||
            run_ended.stop_requested())
            return;
        log_.warn("stopping: the I/O threads still had work " +
                  std::to_string(io_stop_bound.count()) + " s after the kernels stopped (" +
                  std::to_string(http_.open_connections()) +
                  " client connection(s) open); exiting without waiting for it");
        std::fflush(nullptr);
        std::_Exit(0);
    });
}

}  // namespace callisto::gateway
