#pragma once
// The egress proxy plugged into kernel starts (issue 36): for each kernel that may reach
// anything, a listener inside its jail's network namespace (launcher/sandbox/netns_listener.hpp)
// and a proxy of its own (gateway/egress/egress_proxy.hpp) that knows whose kernel it serves. The
// identity belongs to the listener, which only that kernel's namespace can reach, so no kernel
// can use another's. Every connection's record goes to the audit log and to /metrics.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "common/logger.hpp"
#include "common/metrics.hpp"
#include "gateway/audit/audit_log.hpp"
#include "gateway/egress/egress_proxy.hpp"
#include "gateway/kernels/session/kernel_ports.hpp"

namespace callisto::gateway {

struct kernel_egress_settings {
    egress::proxy_settings proxy;
    // The gateway's own listeners, which no rule opens (an unspecified address: every one).
    std::vector<std::pair<egress::ip_address, std::uint16_t>> own_endpoints;
};

class kernel_egress final : public kernels::egress_port {
public:
    // `audit` may be null (no --audit-log); the counters are registered in `metrics`.
    kernel_egress(boost::asio::any_io_executor executor, kernel_egress_settings settings,
                  audit::audit_log* audit, metrics::registry& metrics, logger log);
    ~kernel_egress() override;

    std::variant<std::shared_ptr<void>, std::string> open(const std::string& kernel_id,
                                                          const kernels::egress_request& what,
                                                          int netns_fd) override;

    // The gateway's ordered shutdown: every listener closed, every connection ended.
    void stop();

    // Each networked kernel's rules and what its proxy has carried (the admin console's
    // view): one entry per open proxy, so as many as there are networked kernels.
    struct kernel_activity {
        std::string kernel_id;
        std::vector<std::string> allow;
        egress::proxy_activity counts;
    };
    std::vector<kernel_activity> activity() const;

    // The audit line of one connection (public for tests).
    static audit::egress_attempt attempt_of(const egress::connection_record& r);

private:
    struct sink;
    struct opened;
    boost::asio::any_io_executor executor_;
    kernel_egress_settings settings_;
    std::shared_ptr<sink> sink_;  // what records go to; proxies hold it weakly
    logger log_;
    mutable std::mutex mutex_;
    std::vector<std::weak_ptr<opened>> open_;
};

}  // namespace callisto::gateway
