#pragma once
// MCP's lifecycle facts: the protocol revisions Callisto speaks, version negotiation on
// initialize, and the initialize result. Pure.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace callisto::gateway::mcp {

// Newest first. Both use the Streamable HTTP transport; 2025-06-18 adds the
// MCP-Protocol-Version header and drops batches (which Callisto refuses for both).
inline constexpr std::string_view supported_protocol_versions[] = {"2025-06-18", "2025-03-26"};
inline constexpr std::string_view latest_protocol_version = supported_protocol_versions[0];

bool is_supported_protocol_version(std::string_view version);

// initialize's params: {"protocolVersion": string, "capabilities": object, "clientInfo":
// {"name", "version"}}. The client's version when we speak it, else our latest (the client
// then decides whether to go on). nullopt and a sentence when the params are malformed.
std::optional<std::string> negotiate_protocol_version(const nlohmann::json& params,
                                                      std::string& error);

nlohmann::json initialize_result(std::string_view protocol_version,
                                 std::string_view server_version);

}  // namespace callisto::gateway::mcp
