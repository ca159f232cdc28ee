#include "gateway/http_front.hpp"

#include <chrono>

#include "gateway/host_defaults.hpp"
#include "gateway/http/listener.hpp"
#include "gateway/routes.hpp"
#include "gateway/token_auth.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;

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

http_front::http_front(asio::io_context& ioc, const server_config& config,
                       metrics::registry& metrics, kernel_runtime& runtime, api_surfaces& apis,
                       const tls_context* tls, const logger& log)
    : config_(config),
      log_(log),
      apis_(apis),
      auth_(config.users_file.empty() ? user_directory(token_auth(config.token))
                                      : user_directory(config.users_file)),
      users_watch_(ioc),
      requests_(metrics, log.component("access")),
      connections_(config.max_connections, config.max_connections_per_address),
      request_bodies_(config.max_body_bytes_in_flight),
      readiness_(runtime.kernels(), runtime.sandboxed(), runtime.host()),
      services_{config,
                auth_,
                runtime.kernels(),
                apis.kernels_rest(),
                apis.kernelspecs_rest(),
                sessions_,
                connections_,
                request_bodies_,
                readiness_,
                log.component("http"),
                apis.interpreter_rest(),
                apis.mcp(),
                metrics,
                apis.admin_rest(),
                runtime.host(),
                apis.e2b()},
      dispatcher_(auth_, config.max_request_body_bytes,
                  "which is fixed; larger data goes up as a file, up to --upload-limit: PUT "
                  "/v1/contexts/{id}/files/{path} or a multipart POST to .../files"),
      http_{dispatcher_, connections_,          request_bodies_,       sessions_,
            requests_,   config.header_timeout, log.component("http"), tls} {
    register_routes(dispatcher_, services_);
    listener_ = make_listener(ioc, config_, http_);
    report_web_root();
}

http_front::~http_front() = default;

asio::ip::tcp::endpoint http_front::local_endpoint() const { return listener_->local_endpoint(); }

void http_front::start() {
    listener_->run();
    if (auth_.has_file()) watch_users_file();
}

void http_front::stop() {
    listener_->stop();
    users_watch_.cancel();
    readiness_.begin_drain();
    sessions_.close_all();
}

void http_front::reload_users(const std::string& why) {
    if (!auth_.has_file()) return;
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
void http_front::watch_users_file() {
    users_watch_.expires_after(std::chrono::seconds(2));
    users_watch_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        if (auth_.file_changed()) reload_users("the users file changed");
        watch_users_file();
    });
}

// The URL printed at start answers a JSON 404 without a web UI: say so, and where it was
// looked for.
void http_front::report_web_root() const {
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

}  // namespace callisto::gateway
