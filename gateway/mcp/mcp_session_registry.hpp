#pragma once
// The live MCP sessions: created by initialize, found by id for their owner only (another
// user's id, even an admin's, answers as unknown: a session id is one client's handle),
// ended by DELETE /mcp, by idle expiry, or when the server stops. Ending a session closes its
// tools, which deletes its interpreter context.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/logger.hpp"
#include "gateway/mcp/mcp_session.hpp"
#include "gateway/mcp/mcp_session_limits.hpp"
#include "gateway/mcp/tool_backend.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::mcp {

class mcp_session_registry {
public:
    using clock_fn = std::function<mcp_session::clock::time_point()>;

    mcp_session_registry(tool_backend_factory factory, mcp_session_limits limits, logger log,
                         clock_fn clock = mcp_session::clock::now);
    ~mcp_session_registry();

    const mcp_session_limits& limits() const { return limits_; }

    // nullptr and a sentence when the owner already has max_per_user sessions.
    std::shared_ptr<mcp_session> create(const user& owner, std::string protocol_version,
                                        std::string& error);
    // Refreshes the session's idle clock.
    std::shared_ptr<mcp_session> find_for(const std::string& id, const user& who);
    // A tool call of the session ended: its idle time counts from now.
    void call_finished(mcp_session& s) {
        s.touch(clock_());
        s.end_call();
    }
    // Ends the session; false when `who` has no session of that id.
    bool remove_for(const std::string& id, const user& who);
    // Ends sessions idle for longer than the timeout (never one with a call in flight).
    std::size_t expire_idle();
    void close_all();
    // Ends the sessions of these users (removed from the users file, or changed).
    void close_of_users(const std::set<std::string>& names);
    std::size_t size() const;

    // Runs expire_idle() periodically on `ioc` until stop_expiry() or close_all().
    void start_expiry(boost::asio::io_context& ioc);

private:
    void schedule_expiry();
    void end(const std::shared_ptr<mcp_session>& s, const char* why);

    const tool_backend_factory factory_;
    const mcp_session_limits limits_;
    logger log_;
    const clock_fn clock_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<mcp_session>> sessions_;
    std::optional<boost::asio::steady_timer> timer_;  // guarded by mutex_
    bool stopped_ = false;
};

}  // namespace callisto::gateway::mcp
