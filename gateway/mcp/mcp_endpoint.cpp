#include "gateway/mcp/mcp_endpoint.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include "gateway/http/beast.hpp"
#include "gateway/mcp/json_rpc.hpp"
#include "gateway/mcp/mcp_dispatcher.hpp"
#include "gateway/mcp/mcp_protocol.hpp"

namespace callisto::gateway::mcp {

namespace {

constexpr const char* session_header = "Mcp-Session-Id";
constexpr const char* version_header = "MCP-Protocol-Version";

// Transport-level failures: an HTTP status and, as the spec allows, a JSON-RPC error body
// without an id (or with the request's, when it is known).
http_response rpc_http_error(http::status status, int code, std::string message,
                             const nlohmann::json& id = nullptr) {
    return json_response(status, rpc_error_object(id, code, std::move(message)));
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// "application/json; charset=utf-8" -> "application/json"
std::string_view media_type(std::string_view value) {
    return trim(value.substr(0, value.find(';')));
}

bool accepts_json(std::string_view accept) {
    if (trim(accept).empty()) return true;  // no preference stated
    while (!accept.empty()) {
        auto comma = accept.find(',');
        auto type = media_type(accept.substr(0, comma));
        if (beast::iequals(type, "application/json") || beast::iequals(type, "application/*") ||
            type == "*/*")
            return true;
        if (comma == std::string_view::npos) break;
        accept.remove_prefix(comma + 1);
    }
    return false;
}

// DNS rebinding defence (required by the transport spec): a browser page's Origin must be
// this server itself. Requests without Origin (every non-browser client) pass.
bool origin_allowed(std::string_view origin, std::string_view host) {
    if (origin.empty()) return true;
    auto scheme = origin.find("://");
    if (scheme == std::string_view::npos) return false;  // includes "null"
    auto authority = origin.substr(scheme + 3);
    if (auto slash = authority.find('/'); slash != std::string_view::npos)
        authority = authority.substr(0, slash);
    return !host.empty() && beast::iequals(authority, host);
}

}  // namespace

mcp_endpoint::mcp_endpoint(mcp_session_registry& sessions, tool_limits limits,
                           std::string server_version)
    : sessions_(sessions), limits_(limits), server_version_(std::move(server_version)) {}

std::size_t mcp_endpoint::max_body_bytes() const {
    // base64 is 4/3 of the bytes, plus the JSON around it.
    return limits_.max_upload_bytes / 3 * 4 + 4 + (64 << 10);
}

http_response mcp_endpoint::unauthorized() {
    auto res =
        rpc_http_error(http::status::unauthorized, rpc_error::server_error,
                       "a valid token is required: 'Authorization: Bearer T' (or 'token T')");
    res.set(http::field::www_authenticate, "Bearer realm=\"callisto\"");
    return res;
}

void mcp_endpoint::handle(const http_request& req, const user& who, respond_fn respond) {
    if (!origin_allowed(req[http::field::origin], req[http::field::host]))
        return respond(rpc_http_error(http::status::forbidden, rpc_error::server_error,
                                      "the Origin header names another site"));
    if (req.method() == http::verb::delete_) return end_session(req, who, std::move(respond));
    return post(req, who, std::move(respond));
}

void mcp_endpoint::end_session(const http_request& req, const user& who, respond_fn respond) {
    const std::string id(req[session_header]);
    if (id.empty())
        return respond(
            rpc_http_error(http::status::bad_request, rpc_error::server_error,
                           "DELETE /mcp needs the Mcp-Session-Id header of the session to end"));
    if (!sessions_.remove_for(id, who))
        return respond(rpc_http_error(http::status::not_found, rpc_error::server_error,
                                      "no such MCP session (it ended or expired)"));
    respond(empty_response(http::status::no_content));
}

void mcp_endpoint::post(const http_request& req, const user& who, respond_fn respond) {
    if (!beast::iequals(media_type(req[http::field::content_type]), "application/json"))
        return respond(rpc_http_error(http::status::unsupported_media_type, rpc_error::server_error,
                                      "POST /mcp takes one JSON-RPC message as application/json"));
    if (!accepts_json(req[http::field::accept]))
        return respond(rpc_http_error(http::status::not_acceptable, rpc_error::server_error,
                                      "this server answers with application/json; the Accept "
                                      "header must allow it"));
    const std::string version(req[version_header]);
    if (!version.empty() && !is_supported_protocol_version(version))
        return respond(rpc_http_error(http::status::bad_request, rpc_error::server_error,
                                      "unsupported MCP-Protocol-Version '" + version +
                                          "'; this server speaks 2025-06-18 and 2025-03-26"));

    auto msg = parse_rpc_message(req.body());
    if (msg.kind == message_kind::invalid)
        return respond(
            rpc_http_error(http::status::bad_request, msg.error_code, msg.error, msg.id));

    if (msg.kind == message_kind::request && msg.method == "initialize") {
        // Always a new session; an Mcp-Session-Id sent along is ignored (the client is
        // starting over, e.g. after a 404).
        std::string error;
        auto negotiated = negotiate_protocol_version(msg.params, error);
        if (!negotiated)
            return respond(json_response(
                http::status::ok, rpc_error_object(msg.id, rpc_error::invalid_params, error)));
        auto session = sessions_.create(who, *negotiated, error);
        if (!session) {
            auto res = rpc_http_error(http::status::too_many_requests, rpc_error::server_error,
                                      error, msg.id);
            res.set(http::field::retry_after, "60");
            return respond(std::move(res));
        }
        auto res = json_response(
            http::status::ok, rpc_result(msg.id, initialize_result(*negotiated, server_version_)));
        res.set(session_header, session->id());
        return respond(std::move(res));
    }

    const std::string id(req[session_header]);
    if (id.empty())
        return respond(rpc_http_error(http::status::bad_request, rpc_error::server_error,
                                      "the Mcp-Session-Id header is required: send initialize "
                                      "first and repeat the id it answers with",
                                      msg.id));
    auto session = sessions_.find_for(id, who);
    if (!session)
        return respond(rpc_http_error(http::status::not_found, rpc_error::server_error,
                                      "no such MCP session (it ended or expired); send "
                                      "initialize to start a new one",
                                      msg.id));
    if (!version.empty() && version != session->protocol_version())
        return respond(rpc_http_error(http::status::bad_request, rpc_error::server_error,
                                      "MCP-Protocol-Version '" + version +
                                          "' differs from the "
                                          "session's, '" +
                                          session->protocol_version() + "'",
                                      msg.id));

    if (msg.kind != message_kind::request) {
        if (msg.kind == message_kind::notification && msg.method == "notifications/initialized")
            session->mark_initialized();
        // A host gives up on a slow tools/call (its timeout, or the user): interrupt the code
        // rather than let it hold the session's kernel.
        if (msg.kind == message_kind::notification && msg.method == "notifications/cancelled" &&
            msg.params.contains("requestId") &&
            (msg.params["requestId"].is_string() || msg.params["requestId"].is_number_integer()))
            session->tools().cancel(msg.params["requestId"].dump());
        // Other notifications (progress, roots) and responses need nothing from us.
        return respond(empty_response(http::status::accepted));
    }

    session->begin_call();
    dispatch_request(msg, session->tools(), limits_,
                     [this, session, respond = std::move(respond)](nlohmann::json answer) {
                         sessions_.call_finished(*session);
                         respond(json_response(http::status::ok, answer));
                     });
}

}  // namespace callisto::gateway::mcp
