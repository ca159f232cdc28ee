#include "gateway/interpreter/context_record.hpp"

#include <stdexcept>

#include "kernelproto/json_fields.hpp"

namespace callisto::gateway::interpreter {

using nlohmann::json;

using namespace callisto::kernelproto;

json context_record::to_json() const {
    return {{"id", id},
            {"owner", owner},
            {"kernel_id", kernel_id},
            {"policy", kernels::to_string(policy)},
            {"kernel_uses", kernel_uses},
            {"workdir", workdir.string()},
            {"chdir_kernel", chdir_kernel},
            {"via_e2b", via_e2b},
            {"start_dir", start_dir},
            {"home", home},
            {"shares_files_of", shares_files_of},
            {"created_at", created_at},
            {"executions", executions}};
}

context_record context_record::from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("not an object");
    context_record r;
    r.id = string_field(j, "id");
    r.owner = string_field(j, "owner");
    r.kernel_id = string_field(j, "kernel_id");
    const auto policy = kernels::parse_kernel_policy(string_field(j, "policy"));
    if (!policy) throw std::invalid_argument("'policy' is not a kernel policy");
    r.policy = *policy;
    r.kernel_uses = whole_field<std::size_t>(j, "kernel_uses");
    r.workdir = string_field(j, "workdir");
    r.chdir_kernel = bool_field(j, "chdir_kernel");
    if (j.contains("via_e2b")) r.via_e2b = bool_field(j, "via_e2b");
    if (j.contains("start_dir")) r.start_dir = string_field(j, "start_dir");
    if (j.contains("home")) r.home = string_field(j, "home");
    if (j.contains("shares_files_of")) r.shares_files_of = string_field(j, "shares_files_of");
    r.created_at = string_field(j, "created_at");
    r.executions = required_field(j, "executions");
    if (!r.executions.is_array()) throw std::invalid_argument("'executions' is not a list");
    return r;
}

}  // namespace callisto::gateway::interpreter
