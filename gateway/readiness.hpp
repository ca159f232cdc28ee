#pragma once
// What GET /readyz answers: whether a load balancer should send this replica new users. Ready
// once start-up is over (the sandbox probe passed at start, or the sandbox is off, which the
// answer says; the warm pool has been full once) and until a stop begins to drain it. GET
// /healthz needs none of this: that the event loop answers is the whole check.

#include <atomic>

#include <nlohmann/json.hpp>

#include "gateway/kernels/kernel_manager.hpp"

namespace callisto::gateway {

class readiness {
public:
    readiness(const kernels::kernel_manager& kernels, bool sandboxed)
        : kernels_(kernels), sandboxed_(sandboxed) {}

    // From now on not ready: a proxy stops sending new users while those connected finish.
    void begin_drain() { draining_ = true; }
    bool draining() const { return draining_.load(); }

    struct report {
        bool ready = false;
        nlohmann::json body;  // {"ready", "checks": {"sandbox", "warm_pool", "draining"}}
    };
    report check() const {
        const bool pool = kernels_.pool_filled_once();
        const bool draining = draining_.load();
        report r;
        r.ready = pool && !draining;
        r.body = {{"ready", r.ready},
                  {"checks",
                   {{"sandbox", sandboxed_ ? "on" : "off"},
                    {"warm_pool", pool ? "filled" : "filling"},
                    {"draining", draining}}}};
        // A 503 is an error answer like any other: it says why.
        if (!r.ready) {
            r.body["reason"] = "Service Unavailable";
            r.body["message"] = draining ? "draining: the server is stopping"
                                         : "starting: the warm pool is filling";
        }
        return r;
    }

private:
    const kernels::kernel_manager& kernels_;
    const bool sandboxed_;
    std::atomic<bool> draining_{false};
};

}  // namespace callisto::gateway
