#include "gateway/kernels/records/kernel_record.hpp"

#include <stdexcept>

#include "kernelproto/json_fields.hpp"

namespace callisto::gateway::kernels {

using nlohmann::json;
using namespace callisto::kernelproto;

std::string kernel_record::sandbox_owner() const {
    // A sandbox's workdir is named after the kernel that made it (<workdir-root>/<id>).
    if (!uid) return {};
    auto name = workdir.filename().string();
    return name == id ? std::string() : name;
}

json kernel_record::to_json() const {
    json j = {{"id", id},
              {"kernelspec", kernelspec},
              {"owner", owner},
              {"env", env},
              {"pid", pid},
              {"start_ticks", start_ticks},
              {"forked", forked},
              {"runtime_dir", runtime_dir.string()},
              {"connection", connection.to_json()},
              {"session", session}};
    if (!egress_allow.empty()) j["egress_allow"] = egress_allow;
    if (uid) {
        j["uid"] = *uid;
        j["cgroup"] = cgroup;
        j["workdir"] = workdir.string();
    }
    return j;
}

kernel_record kernel_record::from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("not an object");
    kernel_record r;
    r.id = string_field(j, "id");
    r.kernelspec = string_field(j, "kernelspec");
    r.owner = string_field(j, "owner");
    const auto& env = required_field(j, "env");
    if (!env.is_object()) throw std::invalid_argument("'env' is not an object");
    for (const auto& [key, value] : env.items()) {
        if (!value.is_string()) throw std::invalid_argument("'env' holds a value not a string");
        r.env[key] = value.get<std::string>();
    }
    r.pid = whole_field<pid_t>(j, "pid");
    if (r.pid <= 1) throw std::invalid_argument("'pid' is not a process of ours");
    r.start_ticks = whole_field<std::uint64_t>(j, "start_ticks");
    r.forked = bool_field(j, "forked");
    r.runtime_dir = string_field(j, "runtime_dir");
    r.connection = connection_info::from_json(required_field(j, "connection"));
    if (j.contains("session")) r.session = string_field(j, "session");
    if (j.contains("egress_allow")) {
        const auto& allow = j["egress_allow"];
        if (!allow.is_array()) throw std::invalid_argument("'egress_allow' is not an array");
        for (const auto& rule : allow) {
            if (!rule.is_string() || rule.get_ref<const std::string&>().empty())
                throw std::invalid_argument("'egress_allow' holds a rule not a non-empty string");
            r.egress_allow.push_back(rule.get<std::string>());
        }
    }
    if (j.contains("uid")) {
        r.uid = whole_field<uid_t>(j, "uid");
        r.cgroup = string_field(j, "cgroup");
        r.workdir = string_field(j, "workdir");
    }
    return r;
}

}  // namespace callisto::gateway::kernels
