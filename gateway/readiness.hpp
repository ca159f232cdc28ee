#pragma once
// What GET /readyz answers: whether a load balancer should send this replica new users. Ready
// once start-up is over (the sandbox probe passed at start, or the sandbox is off, which the
// answer says; the warm pool has been full once) and until a stop begins to drain it; not
// while the host is past its capacity (common/host_load.hpp), when new work is refused here
// anyway. GET /healthz needs none of this: that the event loop answers is the whole check.

#include <atomic>

#include <nlohmann/json.hpp>

#include "common/host_load.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"

namespace callisto::gateway {

class readiness {
public:
    readiness(const kernels::kernel_manager& kernels, bool sandboxed, const host_load& host)
        : kernels_(kernels), sandboxed_(sandboxed), host_(host) {}

    // From now on not ready: a proxy stops sending new users while those connected finish.
    void begin_drain() { draining_ = true; }
    bool draining() const { return draining_.load(); }

    struct report {
        bool ready = false;
        // {"ready", "checks": {"sandbox", "warm_pool", "draining", "capacity"}}
        nlohmann::json body;
    };
    report check() const {
        const bool pool = kernels_.pool_filled_once();
        const bool draining = draining_.load();
        const bool saturated = host_.saturated();
        report r;
        r.ready = pool && !draining && !saturated;
        r.body = {{"ready", r.ready},
                  {"checks",
                   {{"sandbox", sandboxed_ ? "on" : "off"},
                    {"warm_pool", pool ? "filled" : "filling"},
                    {"draining", draining},
                    {"capacity", saturated ? "saturated" : "ok"}}}};
        // A 503 is an error answer like any other: it says why.
        if (!r.ready) {
            r.body["reason"] = "Service Unavailable";
            r.body["message"] = draining ? "draining: the server is stopping"
                                : !pool  ? "starting: the warm pool is filling"
                                         : "saturated: " + host_.reason();
        }
        return r;
    }

private:
    const kernels::kernel_manager& kernels_;
    const bool sandboxed_;
    const host_load& host_;
    std::atomic<bool> draining_{false};
};

}  // namespace callisto::gateway
