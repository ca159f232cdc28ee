#include "gateway/kernel_egress.hpp"

#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "launcher/sandbox/netns_listener.hpp"

namespace callisto::gateway {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Where records go, shared weakly with the proxies: a connection that ends after the gateway
// has let go of its egress (shutdown) records nothing rather than touch what is gone.
struct kernel_egress::sink {
    audit::audit_log* audit;
    logger log;
    metrics::counter_family& connections;
    metrics::counter_family& bytes;

    void record(const egress::connection_record& r) {
        const char* decision = r.allowed ? "allowed" : "refused";
        connections.with({decision}).inc();
        bytes.with({decision, "up"}).inc(static_cast<double>(r.bytes_up));
        bytes.with({decision, "down"}).inc(static_cast<double>(r.bytes_down));
        log.info(std::string("egress ") + decision + ": " + r.method + " " + r.host + ":" +
                 std::to_string(r.port) + " (" + r.rule + ")");
        if (!audit) return;
        if (auto error = audit->record_egress(attempt_of(r)); !error.empty())
            log.warn("egress connection not recorded in the audit log: " + error);
    }
};

// One kernel's listener and proxy; closing both when the kernel's process lets go of it.
struct kernel_egress::opened {
    opened(std::shared_ptr<tcp::acceptor> a, std::shared_ptr<egress::egress_proxy> p,
           std::string id, std::vector<std::string> rules)
        : acceptor(std::move(a)),
          proxy(std::move(p)),
          kernel_id(std::move(id)),
          allow(std::move(rules)) {}
    opened(const opened&) = delete;
    opened& operator=(const opened&) = delete;
    std::shared_ptr<tcp::acceptor> acceptor;
    std::shared_ptr<egress::egress_proxy> proxy;
    const std::string kernel_id;
    const std::vector<std::string> allow;
    ~opened() {
        // On the acceptor's strand: its pending accept ends there.
        asio::post(acceptor->get_executor(), [acceptor = acceptor] {
            boost::system::error_code ignored;
            acceptor->close(ignored);
        });
        proxy->stop();
    }
};

namespace {

void accept_next(std::shared_ptr<tcp::acceptor> acceptor,
                 std::weak_ptr<egress::egress_proxy> weak_proxy, egress::connection_identity who) {
    acceptor->async_accept(
        [acceptor, weak_proxy, who](boost::system::error_code ec, tcp::socket socket) mutable {
            if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
            auto proxy = weak_proxy.lock();
            if (!proxy) return;
            if (!ec) proxy->serve(std::move(socket), who);
            // Another error (a connection reset before it was taken, descriptors short for a
            // moment): the listener stays.
            accept_next(std::move(acceptor), std::move(weak_proxy), std::move(who));
        });
}

}  // namespace

kernel_egress::kernel_egress(asio::any_io_executor executor, kernel_egress_settings settings,
                             audit::audit_log* audit, metrics::registry& metrics, logger log)
    : executor_(std::move(executor)),
      settings_(std::move(settings)),
      sink_(std::make_shared<sink>(
          sink{audit, log,
               metrics.counters("callisto_egress_connections_total",
                                "Connections kernels opened through the egress proxy, by decision",
                                {"decision"}),
               metrics.counters("callisto_egress_bytes_total",
                                "Bytes relayed by the egress proxy, by decision and direction (up: "
                                "kernel to destination)",
                                {"decision", "direction"})})),
      log_(std::move(log)) {
    // Every series from the start, at 0: an alert has something to watch before the first.
    for (const char* decision : {"allowed", "refused"}) {
        sink_->connections.with({decision});
        for (const char* direction : {"up", "down"}) sink_->bytes.with({decision, direction});
    }
}

kernel_egress::~kernel_egress() { stop(); }

audit::egress_attempt kernel_egress::attempt_of(const egress::connection_record& r) {
    audit::egress_attempt a;
    a.finished = std::chrono::system_clock::now();
    a.user = r.who.user;
    a.kernel_id = r.who.kernel_id;
    a.method = r.method;
    a.host = r.host;
    a.port = r.port;
    a.address = r.address;
    a.allowed = r.allowed;
    a.rule = r.rule;
    a.reason = r.reason;
    a.status = r.status;
    a.ended = r.ended;
    a.bytes_up = r.bytes_up;
    a.bytes_down = r.bytes_down;
    a.duration = r.duration;
    return a;
}

std::variant<std::shared_ptr<void>, std::string> kernel_egress::open(
    const std::string& kernel_id, const kernels::egress_request& what, int netns_fd) {
    auto parsed = egress::allowlist::parse(what.allow);
    if (auto* error = std::get_if<std::string>(&parsed)) return *error;
    auto rules =
        std::make_shared<egress::allowlist>(std::get<egress::allowlist>(std::move(parsed)));
    for (const auto& [address, port] : settings_.own_endpoints)
        rules->forbid_endpoint(address, port, "the gateway's own listener");

    auto listening = launcher::listen_in_namespace(netns_fd, kernels::egress_listen_port);
    if (auto* ec = std::get_if<std::error_code>(&listening))
        return "cannot listen on 127.0.0.1:" + std::to_string(kernels::egress_listen_port) +
               " in the kernel's namespace: " + ec->message();
    auto fd = std::get<unique_fd>(std::move(listening));

    auto acceptor = std::make_shared<tcp::acceptor>(asio::make_strand(executor_));
    boost::system::error_code ec;
    acceptor->assign(tcp::v4(), fd.get(), ec);
    if (ec) return "cannot take the kernel's listener: " + ec.message();
    fd.release();

    std::weak_ptr<sink> weak_sink = sink_;
    auto proxy = egress::egress_proxy::create(
        executor_, std::move(rules), settings_.proxy,
        [weak_sink](const egress::connection_record& r) {
            if (auto s = weak_sink.lock()) s->record(r);
        },
        log_.with("kernel_id", kernel_id));
    auto handle = std::make_shared<opened>(acceptor, proxy, kernel_id, what.allow);
    {
        std::lock_guard lock(mutex_);
        std::erase_if(open_, [](const auto& w) { return w.expired(); });
        open_.push_back(handle);
    }
    egress::connection_identity who{kernel_id, what.user};
    asio::post(acceptor->get_executor(),
               [acceptor, proxy, who] { accept_next(acceptor, proxy, who); });
    log_.info("kernel " + kernel_id + " of " + what.user + " may reach " +
              std::to_string(what.allow.size()) + " destination rule(s) through the egress proxy");
    return std::shared_ptr<void>(std::move(handle));
}

void kernel_egress::stop() {
    std::vector<std::weak_ptr<opened>> open;
    {
        std::lock_guard lock(mutex_);
        open.swap(open_);
    }
    for (const auto& w : open)
        if (auto o = w.lock()) {
            asio::post(o->acceptor->get_executor(), [acceptor = o->acceptor] {
                boost::system::error_code ignored;
                acceptor->close(ignored);
            });
            o->proxy->stop();
        }
}

std::vector<kernel_egress::kernel_activity> kernel_egress::activity() const {
    std::vector<kernel_activity> out;
    std::lock_guard lock(mutex_);
    for (const auto& w : open_)
        if (auto o = w.lock()) out.push_back({o->kernel_id, o->allow, o->proxy->activity()});
    return out;
}

}  // namespace callisto::gateway
