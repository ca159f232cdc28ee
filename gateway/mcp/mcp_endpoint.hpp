#pragma once
// /mcp: the Model Context Protocol over the Streamable HTTP transport (revisions 2025-06-18
// and 2025-03-26), without the optional SSE streams: every request is answered with one
// application/json response, notifications and responses with 202, GET with 405.
//
// POST initialize opens a session (Mcp-Session-Id in the answer); every later POST must name
// it (400 when missing, 404 when unknown, expired or another user's); DELETE ends it.

#include <cstddef>
#include <string>

#include "gateway/http/http_message.hpp"
#include "gateway/mcp/mcp_session_registry.hpp"
#include "gateway/mcp/mcp_tools.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::mcp {

class mcp_endpoint {
public:
    mcp_endpoint(mcp_session_registry& sessions, tool_limits limits, std::string server_version);

    // An authenticated request to /mcp (POST or DELETE). `respond` may run on another thread.
    void handle(const http_request& req, const user& who, respond_fn respond);

    // The body limit of POST /mcp: room for upload_file's base64 content.
    std::size_t max_body_bytes() const;

    // What /mcp answers without a valid token: 401 and a Bearer challenge, as MCP hosts expect.
    static http_response unauthorized();

private:
    void post(const http_request& req, const user& who, respond_fn respond);
    void end_session(const http_request& req, const user& who, respond_fn respond);

    mcp_session_registry& sessions_;
    const tool_limits limits_;
    const std::string server_version_;
};

}  // namespace callisto::gateway::mcp
