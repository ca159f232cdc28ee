#include "gateway/kernels/session/server_status.hpp"

#include <nlohmann/json.hpp>

namespace callisto::gateway::kernels {

kernelproto::message make_server_status(std::string_view execution_state, std::string_view session,
                                        const std::string& reason) {
    auto msg = kernelproto::make_message("status", {{"execution_state", execution_state}}, session);
    if (!reason.empty()) msg.metadata = nlohmann::json{{"callisto_reason", reason}}.dump();
    return msg;
}

std::string server_status_reason(const kernelproto::message& msg) {
    const auto metadata = nlohmann::json::parse(msg.metadata, nullptr, false);
    if (!metadata.is_object()) return {};
    const auto it = metadata.find("callisto_reason");
    return it != metadata.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace callisto::gateway::kernels
