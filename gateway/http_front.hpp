#pragma once
// What faces the clients: the users in effect (the token, or --users-file, read again when it
// changes), the route table plugging the APIs in (gateway/routes.cpp), the connection and body
// limits, the access log, the readiness a load balancer reads, the open sessions, and the
// listener. Its constructor binds the listening socket.

#include <memory>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/logger.hpp"
#include "common/metrics.hpp"
#include "gateway/api_surfaces.hpp"
#include "gateway/gateway_services.hpp"
#include "gateway/http/body_budget.hpp"
#include "gateway/http/connection_limiter.hpp"
#include "gateway/http/http_services.hpp"
#include "gateway/http/request_dispatcher.hpp"
#include "gateway/http/request_log.hpp"
#include "gateway/http/session_registry.hpp"
#include "gateway/http/tls_context.hpp"
#include "gateway/kernel_runtime.hpp"
#include "gateway/readiness.hpp"
#include "gateway/server_config.hpp"
#include "gateway/user_directory.hpp"

namespace callisto::gateway {

class listener;

class http_front {
public:
    // Fills the route table and binds the listening socket (so local_endpoint() is known);
    // throws, naming the address, when it cannot. `tls` is null without --certfile.
    http_front(boost::asio::io_context& ioc, const server_config& config,
               metrics::registry& metrics, kernel_runtime& runtime, api_surfaces& apis,
               const tls_context* tls, const logger& log);
    ~http_front();
    http_front(const http_front&) = delete;
    http_front& operator=(const http_front&) = delete;

    boost::asio::ip::tcp::endpoint local_endpoint() const;

    // Accepts connections; with --users-file, watches it for changes.
    void start();
    // The server is stopping: no new connection, not ready, every open session closed.
    void stop();
    // Once the kernels are gone: the sessions still finishing their close.
    void close_sessions() { sessions_.close_all(); }

    // With --users-file: reads it again and closes the connections and MCP sessions of the
    // users whose entry went or changed. `why` begins the log line.
    void reload_users(const std::string& why);

    readiness& ready() { return readiness_; }
    std::size_t open_connections() const { return connections_.open_connections(); }
    const session_registry& sessions() const { return sessions_; }

private:
    void watch_users_file();
    void report_web_root() const;

    const server_config& config_;
    logger log_;
    api_surfaces& apis_;  // their MCP sessions close with their users' connections
    user_directory auth_;
    boost::asio::steady_timer users_watch_;  // polls the users file for changes
    session_registry sessions_;
    request_log requests_;
    connection_limiter connections_;
    body_budget request_bodies_;
    readiness readiness_;
    gateway_services services_;
    request_dispatcher dispatcher_;  // gateway/routes.cpp fills it
    http_services http_;
    std::shared_ptr<listener> listener_;
};

}  // namespace callisto::gateway
