#pragma once
// Everything that runs kernels: the ZeroMQ reactor, the process supervisor and the zygotes,
// the sandbox and its uids, the kernelspecs offered, the kernel manager (pools, culling, reuse),
// the host's load the kernels are judged by, and the egress proxy's kernel end. Nothing here
// speaks HTTP: the APIs are built on kernels().

#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/host_load.hpp"
#include "common/logger.hpp"
#include "common/metrics.hpp"
#include "gateway/host_load_sampler.hpp"
#include "gateway/instance_directories.hpp"
#include "gateway/kernel_egress.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/kernels/lifecycle/kernel_metrics.hpp"
#include "gateway/kernels/session/kernel_environment.hpp"
#include "gateway/kernels/session/kernel_ports.hpp"
#include "gateway/memory_trimmer.hpp"
#include "gateway/server_config.hpp"
#include "gateway/state_stores.hpp"
#include "launcher/kernelspec/kernelspec_catalog.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/sandbox/sandbox.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"
#include "launcher/zygote/zygote_pool.hpp"
#include "transport/reactor.hpp"

namespace callisto::gateway {

class kernel_runtime {
public:
    // What the sandbox needs of this process (root), checked before any directory is made or
    // changed: a user without root is told that, not what the first chmod said.
    static server_config checked_before_start(server_config config);

    // Probes the sandbox (throws with the probe's explanation when no safe mode exists),
    // discovers the kernelspecs and refuses a --kernel-dir, --default-kernel, --pool or
    // --e2b-template naming none. Nothing is started and nothing written yet.
    kernel_runtime(boost::asio::io_context& ioc, const server_config& config,
                   metrics::registry& metrics, instance_directories& directories,
                   const state_stores& state, const logger& log);
    ~kernel_runtime();
    kernel_runtime(const kernel_runtime&) = delete;
    kernel_runtime& operator=(const kernel_runtime&) = delete;

    // Once the listener is bound: the egress proxy's kernel end (sandboxed, with
    // --egress-allow), told the gateway's own address, which no rule opens.
    void start_egress(const boost::asio::ip::tcp::endpoint& gateway);
    // Takes the instance's directories over (what a dead previous instance left is reaped),
    // starts the zygotes, and adopts the kernels a previous gateway left running (--state-dir).
    void take_over_host();

    // Pools fill, culling runs, the host's load is sampled.
    void start();
    // The server is stopping: every kernel is shut down, then `done` is called.
    void shut_down(std::function<void()> done);
    // Once the I/O threads have returned: the reactor's thread goes.
    void stop_reactor() { reactor_.stop(); }

    kernels::kernel_manager& kernels() { return kernels_; }
    const kernels::kernel_manager& kernels() const { return kernels_; }
    kernels::kernel_metrics& metrics() { return kernel_metrics_; }
    const kernels::kernel_metrics& metrics() const { return kernel_metrics_; }
    const launcher::kernelspec_catalog& catalog() const { return catalog_; }
    const host_load& host() const { return host_load_; }
    bool sandboxed() const { return sandbox_ != nullptr; }
    // Null before start_egress, and without the sandbox or --egress-allow.
    kernel_egress* egress() const { return egress_.get(); }
    // Whether start_egress will make the egress proxy: sandboxed, with --egress-allow.
    bool egress_enabled() const;

private:
    const server_config& config_;
    logger log_;
    metrics::registry& metrics_;
    instance_directories& directories_;
    const state_stores& state_;  // the kernel records to adopt from, the audit log egress writes
    boost::asio::io_context& ioc_;
    // Before the kernels, which count their silences in it.
    host_load host_load_;
    kernels::kernel_metrics kernel_metrics_;
    transport::reactor reactor_;
    launcher::process_supervisor supervisor_;
    // Null with --zygote=off or without the program. Outlives the kernels it forks.
    std::unique_ptr<launcher::zygote_pool> zygotes_;
    kernels::reactor_link_port kernel_links_;
    kernels::supervisor_process_port kernel_processes_;
    std::unique_ptr<launcher::sandbox> sandbox_;  // null with --sandbox=off
    // After the sandbox: a kernelspec is offered only when its interpreter runs in it.
    launcher::kernelspec_catalog catalog_;
    std::unique_ptr<launcher::sandbox_uid_pool> sandbox_uids_;
    kernels::kernel_environment kernel_env_;
    kernels::kernel_manager kernels_;
    memory_trimmer trimmer_;
    host_load_sampler load_sampler_;
    // The egress proxy's kernel end; null until start_egress, and without --egress-allow.
    // Last: its handles are self-contained, so kernels destroyed after it hold nothing of it.
    std::unique_ptr<kernel_egress> egress_;
};

}  // namespace callisto::gateway
