#include "gateway/e2b/sandbox_record.hpp"

#include <stdexcept>

#include "gateway/e2b/sandbox_registry.hpp"
#include "kernelproto/json_fields.hpp"

namespace callisto::gateway::e2b {

using nlohmann::json;
using namespace callisto::kernelproto;

namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;

std::int64_t to_ms(system_clock::time_point t) {
    return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}

system_clock::time_point time_field(const json& j, const char* name) {
    return system_clock::time_point(milliseconds(whole_field<std::int64_t>(j, name)));
}

std::vector<std::string> strings_field(const json& j, const char* name) {
    const auto& v = required_field(j, name);
    if (!v.is_array()) throw std::invalid_argument(std::string("'") + name + "' is not a list");
    std::vector<std::string> out;
    for (const auto& s : v) {
        if (!s.is_string())
            throw std::invalid_argument(std::string("'") + name + "' holds a non-string");
        out.push_back(s.get<std::string>());
    }
    return out;
}

json owner_json(const user& u) {
    json j = {{"name", u.name}, {"admin", u.admin}, {"max_kernels", u.max_kernels}};
    j["egress_allow"] = u.egress_allow ? json(*u.egress_allow) : json(nullptr);
    return j;
}

user owner_from(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("'owner' is not an object");
    user u;
    u.name = string_field(j, "name");
    u.admin = bool_field(j, "admin");
    u.max_kernels = whole_field<std::size_t>(j, "max_kernels");
    if (!required_field(j, "egress_allow").is_null())
        u.egress_allow = strings_field(j, "egress_allow");
    return u;
}

}  // namespace

json sandbox_record::to_json() const {
    json contexts_json = json::array();
    for (const auto& c : contexts)
        contexts_json.push_back({{"id", c.id}, {"language", c.language}, {"cwd", c.cwd}});
    json env_json = json::array();
    for (const auto& [name, value] : env) env_json.push_back({name, value});
    return {{"id", id},
            {"template_id", template_id},
            {"kernel", kernel},
            {"owner", owner_json(owner)},
            {"metadata", metadata},
            {"envd_token", envd_token},
            {"traffic_token", traffic_token},
            {"started_at_ms", to_ms(started_at)},
            {"end_at_ms", to_ms(end_at)},
            {"env", env_json},
            {"default_context", default_context},
            {"contexts", contexts_json},
            {"network_allow", network_allow}};
}

sandbox_record sandbox_record::from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("not an object");
    sandbox_record r;
    r.id = string_field(j, "id");
    if (!is_valid_sandbox_id(r.id)) throw std::invalid_argument("'id' is not a sandbox id");
    r.template_id = string_field(j, "template_id");
    r.kernel = string_field(j, "kernel");
    r.owner = owner_from(required_field(j, "owner"));
    const auto& metadata = required_field(j, "metadata");
    if (!metadata.is_object()) throw std::invalid_argument("'metadata' is not an object");
    for (const auto& [name, value] : metadata.items()) {
        if (!value.is_string()) throw std::invalid_argument("'metadata' holds a non-string");
        r.metadata[name] = value.get<std::string>();
    }
    r.envd_token = string_field(j, "envd_token");
    r.traffic_token = string_field(j, "traffic_token");
    if (r.envd_token.empty() || r.traffic_token.empty())
        throw std::invalid_argument("a token is empty");
    r.started_at = time_field(j, "started_at_ms");
    r.end_at = time_field(j, "end_at_ms");
    const auto& env = required_field(j, "env");
    if (!env.is_array()) throw std::invalid_argument("'env' is not a list");
    for (const auto& pair : env) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
            throw std::invalid_argument("'env' holds something other than [name, value]");
        r.env.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
    r.default_context = string_field(j, "default_context");
    const auto& contexts = required_field(j, "contexts");
    if (!contexts.is_array()) throw std::invalid_argument("'contexts' is not a list");
    for (const auto& c : contexts)
        r.contexts.push_back(
            {string_field(c, "id"), string_field(c, "language"), string_field(c, "cwd")});
    r.network_allow = strings_field(j, "network_allow");
    return r;
}

}  // namespace callisto::gateway::e2b
