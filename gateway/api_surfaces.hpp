#pragma once
// The APIs the gateway serves, on top of the kernel runtime: the Jupyter Kernel Gateway API
// (/api/kernels, /api/kernelspecs), the /v1 interpreter (contexts, executions, files, with its
// model, the context registry), the /mcp endpoint and its sessions, the E2B-compatible facade,
// and the admin console's views. Each is a set of handlers the route table (gateway/routes.cpp)
// plugs in; none listens itself.

#include <set>
#include <string>

#include <boost/asio/io_context.hpp>

#include "common/logger.hpp"
#include "gateway/admin/activity_history.hpp"
#include "gateway/admin/activity_sampler.hpp"
#include "gateway/admin/admin_api.hpp"
#include "gateway/e2b/e2b_api.hpp"
#include "gateway/interpreter/api/interpreter_api.hpp"
#include "gateway/interpreter/context_registry.hpp"
#include "gateway/jupyter_api/kernels_api.hpp"
#include "gateway/jupyter_api/kernelspec_api.hpp"
#include "gateway/kernel_runtime.hpp"
#include "gateway/mcp/mcp_endpoint.hpp"
#include "gateway/mcp/mcp_session_registry.hpp"
#include "gateway/server_config.hpp"
#include "gateway/state_stores.hpp"

namespace callisto::gateway {

class api_surfaces {
public:
    api_surfaces(boost::asio::io_context& ioc, const server_config& config, kernel_runtime& runtime,
                 const state_stores& state, const logger& log);
    ~api_surfaces();
    api_surfaces(const api_surfaces&) = delete;
    api_surfaces& operator=(const api_surfaces&) = delete;

    // Once the kernels a previous gateway left are adopted (they may still be connecting):
    // the contexts --state-dir recorded are restored, live and then paused.
    void restore_contexts();
    // Timers: MCP sessions expire, E2B sandboxes are culled, the activity is sampled.
    void start(boost::asio::io_context& ioc);
    // The server is stopping: every context and session closes, so what runs ends now and
    // their kernels are shut down rather than reset for a reuse that will not come.
    void stop();
    // Once the kernels are gone: the contexts' directories go.
    void remove_contexts() { contexts_.remove_all(); }
    // The users file changed: these users' MCP sessions end.
    void close_sessions_of(const std::set<std::string>& users) {
        mcp_sessions_.close_of_users(users);
    }

    jupyter_api::kernels_api& kernels_rest() { return kernels_rest_; }
    jupyter_api::kernelspec_api& kernelspecs_rest() { return kernelspecs_rest_; }
    interpreter::interpreter_api& interpreter_rest() { return interpreter_rest_; }
    mcp::mcp_endpoint& mcp() { return mcp_; }
    e2b::e2b_api& e2b() { return e2b_; }
    const admin::admin_api& admin_rest() const { return admin_rest_; }

private:
    admin::activity_sample sample_activity() const;
    // The admin console's view of the networked kernels; empty when egress is off.
    admin::network_source network_source();
    // The E2B sandboxes as the admin console lists them.
    admin::sandbox_source sandbox_source();

    const server_config& config_;
    logger log_;
    kernel_runtime& runtime_;
    const state_stores& state_;
    jupyter_api::kernels_api kernels_rest_;
    jupyter_api::kernelspec_api kernelspecs_rest_;
    interpreter::context_registry contexts_;
    interpreter::interpreter_api interpreter_rest_;
    mcp::mcp_session_registry mcp_sessions_;
    mcp::mcp_endpoint mcp_;
    e2b::e2b_api e2b_;
    admin::activity_history activity_;
    admin::activity_sampler activity_sampler_;
    admin::admin_api admin_rest_;
};

}  // namespace callisto::gateway
