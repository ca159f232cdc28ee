#pragma once
// The shared services every kernel_session uses, owned by the server and outliving all kernels.

#include <boost/asio/io_context.hpp>

#include "common/host_load.hpp"
#include "common/logger.hpp"
#include "gateway/kernels/lifecycle/kernel_metrics.hpp"
#include "gateway/kernels/records/kernel_record_store.hpp"
#include "gateway/kernels/session/kernel_ports.hpp"
#include "gateway/kernels/session/kernel_settings.hpp"
#include "gateway/kernels/session/websocket_executions.hpp"
#include "launcher/sandbox/sandbox.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"

namespace callisto::gateway::kernels {

struct kernel_environment {
    boost::asio::io_context& ioc;
    link_port& links;         // the reactor, through reactor_link_port
    process_port& processes;  // the process supervisor, through supervisor_process_port
    kernel_metrics& metrics;
    kernel_settings settings;
    logger log;
    // Both null with --sandbox=off.
    const launcher::sandbox* sandbox = nullptr;
    launcher::sandbox_uid_pool* sandbox_uids = nullptr;
    // The kernel records of --state-dir; null: kernels die with the gateway, none is recorded.
    kernel_record_store* records = nullptr;
    // Told of every execution a WebSocket client runs (metrics, audit); null: nobody listens.
    execution_observer* executions = nullptr;
    // Whether the host is saturated (a starved kernel's silence is not a frozen kernel's), and
    // where silences are counted; null: every silence is judged by the timeout alone.
    host_load* host = nullptr;
    // The egress proxy's kernel end (issue 36); null: no kernel may ask for network.
    egress_port* egress = nullptr;
};

}  // namespace callisto::gateway::kernels
