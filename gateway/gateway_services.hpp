#pragma once
// What HTTP and WebSocket sessions need from the server, in one place.

#include <functional>
#include <memory>

#include "common/host_load.hpp"
#include "common/logger.hpp"
#include "common/metrics.hpp"
#include "gateway/admin/admin_api.hpp"
#include "gateway/e2b/e2b_api.hpp"
#include "gateway/http/body_budget.hpp"
#include "gateway/http/connection_limiter.hpp"
#include "gateway/http/session_registry.hpp"
#include "gateway/interpreter/api/interpreter_api.hpp"
#include "gateway/jupyter_api/kernels_api.hpp"
#include "gateway/jupyter_api/kernelspec_api.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/mcp/mcp_endpoint.hpp"
#include "gateway/readiness.hpp"
#include "gateway/server_config.hpp"
#include "gateway/user_directory.hpp"

namespace callisto::gateway {

struct gateway_services {
    const server_config& config;
    const user_directory& auth;
    kernels::kernel_manager& kernels;
    jupyter_api::kernels_api& kernels_rest;
    jupyter_api::kernelspec_api& kernelspecs_rest;
    session_registry& sessions;
    connection_limiter& connections;
    body_budget& request_bodies;
    const readiness& ready;
    logger log;
    interpreter::interpreter_api& interpreter_rest;
    mcp::mcp_endpoint& mcp;
    const metrics::registry& metrics;
    const admin::admin_api& admin_rest;
    const host_load& host;  // saturated: new work is refused (gateway/routes.cpp)
    e2b::e2b_api& e2b;      // the E2B-compatible facade (gateway/e2b/)
};

}  // namespace callisto::gateway
