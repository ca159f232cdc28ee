#include "gateway/interpreter/context_fields.hpp"

namespace callisto::gateway::interpreter {

bool is_context_field(std::string_view name) { return name == "kernel" || name == "policy"; }

bool read_context_fields(const nlohmann::json& doc, context_request& out, std::string& error) {
    if (doc.contains("kernel") && !doc["kernel"].is_null()) {
        if (!doc["kernel"].is_string() || doc["kernel"].get<std::string>().empty()) {
            error = "'kernel' must be a kernelspec name";
            return false;
        }
        out.kernel = doc["kernel"].get<std::string>();
    }
    if (doc.contains("policy") && !doc["policy"].is_null()) {
        auto policy = doc["policy"].is_string()
                          ? kernels::parse_kernel_policy(doc["policy"].get<std::string>())
                          : std::nullopt;
        if (!policy) {
            error = "'policy' must be \"reuse\" or \"fresh\"";
            return false;
        }
        out.policy = policy;
    }
    return true;
}

}  // namespace callisto::gateway::interpreter
