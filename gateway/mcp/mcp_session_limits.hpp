#pragma once
// How long an MCP session may idle, and how many one user may hold (--mcp-session-timeout,
// --mcp-max-sessions).

#include <chrono>
#include <cstddef>

namespace callisto::gateway::mcp {

struct mcp_session_limits {
    std::chrono::seconds idle_timeout{3600};  // 0: never expire
    std::size_t max_per_user = 64;
};

}  // namespace callisto::gateway::mcp
