#pragma once
// The whole gateway, as four parts built in the order they depend on each other:
//   state_stores   what is kept on disk: --state-dir's records, the audit log
//   kernel_runtime what runs kernels: reactor, supervisor, zygotes, sandbox, kernel manager
//   api_surfaces   the APIs on the kernels: Jupyter, /v1 interpreter, MCP, E2B, admin
//   http_front     what faces the clients: users, routes, limits, sessions, the listener
// with instance_directories (the workdir root's lock, the runtime root) below them all. The
// server owns the I/O threads and the signals, starts the parts and stops them outside in
// (design.md section 3): the listener and client sessions, the APIs' contexts, the kernels,
// the reactor; then run() returns.

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/logger.hpp"
#include "common/metrics.hpp"
#include "gateway/api_surfaces.hpp"
#include "gateway/http/tls_context.hpp"
#include "gateway/http_front.hpp"
#include "gateway/instance_directories.hpp"
#include "gateway/kernel_runtime.hpp"
#include "gateway/server_config.hpp"
#include "gateway/state_stores.hpp"

namespace callisto::gateway {

class server {
public:
    // Binds the listening socket (so local_endpoint() is known) and discovers kernelspecs.
    // Throws on an unusable address or runtime directory.
    server(server_config config, logger log);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    boost::asio::ip::tcp::endpoint local_endpoint() const { return http_.local_endpoint(); }
    const server_config& config() const { return config_; }

    // Serves until SIGINT/SIGTERM or request_stop(), then stops in order and returns. SIGHUP
    // reloads the TLS certificate and the users file.
    void run();
    void request_stop();  // thread-safe, idempotent

private:
    void wait_for_signal();
    void on_signal(int sig);
    void reload_certificate();
    void begin_stop();
    // SIGUSR2 (or SIGTERM with --keep-kernels-on-exit): exits at once, leaving the kernels
    // running and recorded for the next start to adopt.
    [[noreturn]] void leave_kernels_running(const std::string& signal_name);
    void finish_stop();

    const server_config config_;
    logger log_;
    // Read first: a certificate that cannot be loaded stops the start before anything is made.
    std::unique_ptr<tls_context> tls_;  // null without --certfile
    metrics::registry metrics_;         // GET /metrics; every part registers its own
    // The parts, each built on those above it; destroyed in the reverse order, so what a part
    // uses outlives it: the records and the audit log outlive the kernels and contexts that
    // write them, the runtime root outlives the zygotes and kernels that keep files there.
    instance_directories directories_;
    state_stores state_;
    boost::asio::io_context ioc_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    boost::asio::signal_set signals_;
    boost::asio::steady_timer drain_timer_;  // --drain-seconds, after the first SIGTERM
    kernel_runtime runtime_;
    api_surfaces apis_;
    http_front http_;
    std::atomic<bool> stopping_{false};
    // Started once the last kernel has ended: the I/O threads then have only connections to
    // close, and are stopped if they still run after io_stop_bound.
    std::jthread io_watchdog_;
};

}  // namespace callisto::gateway
