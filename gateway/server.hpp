#pragma once
// The whole gateway: owns the I/O threads, the ZMQ reactor, the process supervisor, the
// kernel registry and the listener, and stops them in order (design.md section 3):
// acceptor, client sessions, kernels, reactor; then run() returns.

#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/directory_lock.hpp"
#include "common/logger.hpp"
#include "gateway/admin/admin_api.hpp"
#include "gateway/api_surfaces.hpp"
#include "gateway/audit/audit_log.hpp"
#include "gateway/e2b/e2b_api.hpp"
#include "gateway/gateway_services.hpp"
#include "gateway/host_load_sampler.hpp"
#include "gateway/http/http_services.hpp"
#include "gateway/http/request_dispatcher.hpp"
#include "gateway/http/session_registry.hpp"
#include "gateway/http/tls_context.hpp"
#include "gateway/instance_directories.hpp"
#include "gateway/interpreter/api/interpreter_api.hpp"
#include "gateway/interpreter/context_registry.hpp"
#include "gateway/jupyter_api/execution_audit.hpp"
#include "gateway/jupyter_api/kernels_api.hpp"
#include "gateway/jupyter_api/kernelspec_api.hpp"
#include "gateway/kernel_runtime.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/kernels/lifecycle/kernel_metrics.hpp"
#include "gateway/kernels/records/kernel_record_store.hpp"
#include "gateway/mcp/mcp_endpoint.hpp"
#include "gateway/mcp/mcp_session_registry.hpp"
#include "gateway/memory_trimmer.hpp"
#include "gateway/readiness.hpp"
#include "gateway/server_config.hpp"
#include "gateway/state_stores.hpp"
#include "gateway/user_directory.hpp"
#include "launcher/kernelspec/kernelspec_catalog.hpp"
#include "launcher/process/instance_lock.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/sandbox/sandbox.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"
#include "launcher/zygote/zygote_pool.hpp"
#include "transport/reactor.hpp"

namespace callisto::gateway {

class listener;

class server {
public:
    // Binds the listening socket (so local_endpoint() is known) and discovers kernelspecs.
    // Throws on an unusable address or runtime directory.
    server(server_config config, logger log);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    boost::asio::ip::tcp::endpoint local_endpoint() const;
    const server_config& config() const { return config_; }

    // Serves until SIGINT/SIGTERM or request_stop(), then stops in order and returns. SIGHUP
    // reloads the TLS certificate.
    void run();
    void request_stop();  // thread-safe, idempotent

private:
    void wait_for_signal();
    void on_signal(int sig);
    void reload_certificate();
    // Reads the users file again (SIGHUP, or a change the watch saw) and closes the open
    // connections and MCP sessions of the users whose entry went or changed.
    void reload_users(const std::string& why);
    void watch_users_file();
    void begin_stop();
    // SIGUSR2 (or SIGTERM with --keep-kernels-on-exit): exits at once, leaving the kernels
    // running and recorded for the next start to adopt.
    [[noreturn]] void leave_kernels_running(const std::string& signal_name);
    void finish_stop();
    void report_web_root() const;

    const server_config config_;
    logger log_;
    std::unique_ptr<tls_context> tls_;  // null without --certfile
    metrics::registry metrics_;         // GET /metrics; every layer registers its own
    // The workdir root's lock and the runtime root: removed once every member below is gone.
    instance_directories directories_;
    // The records --state-dir keeps and the audit log; they outlive everything that writes them.
    state_stores state_;
    boost::asio::io_context ioc_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    boost::asio::signal_set signals_;
    kernel_runtime runtime_;
    api_surfaces apis_;
    user_directory auth_;
    boost::asio::steady_timer users_watch_;  // polls the users file for changes
    session_registry sessions_;
    request_log requests_;
    connection_limiter connections_;
    body_budget request_bodies_;
    readiness readiness_;
    boost::asio::steady_timer drain_timer_;
    gateway_services services_;
    request_dispatcher dispatcher_;  // gateway/routes.cpp fills it
    http_services http_;
    std::shared_ptr<listener> listener_;
    std::atomic<bool> stopping_{false};
};

}  // namespace callisto::gateway
