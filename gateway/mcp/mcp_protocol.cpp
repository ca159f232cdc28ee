#include "gateway/mcp/mcp_protocol.hpp"

namespace callisto::gateway::mcp {

bool is_supported_protocol_version(std::string_view version) {
    for (auto v : supported_protocol_versions)
        if (v == version) return true;
    return false;
}

std::optional<std::string> negotiate_protocol_version(const nlohmann::json& params,
                                                      std::string& error) {
    if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string() ||
        params["protocolVersion"].get_ref<const std::string&>().empty()) {
        error = "initialize needs \"protocolVersion\": the newest MCP revision the client speaks";
        return std::nullopt;
    }
    if (params.contains("capabilities") && !params["capabilities"].is_object()) {
        error = "\"capabilities\" must be an object";
        return std::nullopt;
    }
    if (params.contains("clientInfo") &&
        (!params["clientInfo"].is_object() || !params["clientInfo"].contains("name") ||
         !params["clientInfo"]["name"].is_string())) {
        error = "\"clientInfo\" must be an object with a string \"name\"";
        return std::nullopt;
    }
    const std::string& asked = params["protocolVersion"].get_ref<const std::string&>();
    if (is_supported_protocol_version(asked)) return asked;
    return std::string(latest_protocol_version);
}

nlohmann::json initialize_result(std::string_view protocol_version,
                                 std::string_view server_version) {
    return {{"protocolVersion", protocol_version},
            {"capabilities", {{"tools", {{"listChanged", false}}}}},
            {"serverInfo",
             {{"name", "callisto"},
              {"title", "Callisto code interpreter"},
              {"version", server_version}}},
            {"instructions",
             "Callisto runs Python in a sandboxed Jupyter kernel that belongs to this MCP "
             "session: variables, imports and files persist between run_code calls until the "
             "session ends. run_code also takes language \"bash\" (a shell script) and \"sql\" "
             "(SQLite over the CSV and JSON-lines files in the working directory, each a table "
             "named after its file) in the same kernel and directory, and \"r\" in an R kernel "
             "of its own. Put input files in the working directory with upload_file, read "
             "what your code writes with read_file. Charts come back as images."}};
}

}  // namespace callisto::gateway::mcp
