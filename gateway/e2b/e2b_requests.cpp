#include "gateway/e2b/e2b_requests.hpp"

#include "gateway/egress/egress_allowlist.hpp"
#include "gateway/interpreter/execution_request.hpp"
#include "gateway/interpreter/json_body.hpp"

namespace callisto::gateway::e2b {

namespace {

using nlohmann::json;

// The body as an object; an empty body is an empty object (the SDK may send none).
std::optional<json> object_body(std::string_view body, std::string& error) {
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return json::object();
    auto doc = interpreter::parse_json_body(body, error);
    if (!doc) return std::nullopt;
    if (!doc->is_object()) {
        error = "the body must be a JSON object";
        return std::nullopt;
    }
    return doc;
}

// A member that may be absent or null (the SDK sends `undefined` as absent, Python as null).
const json* member(const json& doc, const char* name) {
    auto it = doc.find(name);
    if (it == doc.end() || it->is_null()) return nullptr;
    return &*it;
}

std::optional<std::chrono::seconds> seconds_of(const json& value, const request_limits& limits,
                                               std::string& error) {
    if (!value.is_number_integer() && !value.is_number_unsigned()) {
        error = "'timeout' must be a whole number of seconds";
        return std::nullopt;
    }
    const auto n = value.get<long long>();
    if (n < 0 || n > limits.max_timeout.count()) {
        error = "'timeout' must be between 0 and " + std::to_string(limits.max_timeout.count()) +
                " seconds";
        return std::nullopt;
    }
    return std::chrono::seconds(n);
}

std::optional<interpreter::env_vars> env_of(const json& doc, const char* name,
                                            const request_limits& limits, std::string& error) {
    const json* value = member(doc, name);
    if (!value) return interpreter::env_vars{};
    std::string why;
    auto env = interpreter::parse_env(*value, limits.env, why);
    if (!env) error = "'" + std::string(name) + "': " + why;
    return env;
}

// E2B's "all traffic" (the SDK's ALL_TRAFFIC, and its IPv6 twin).
bool is_all_traffic(const json& entry) {
    return entry.is_string() && (entry == "0.0.0.0/0" || entry == "::/0");
}

// One allowOut entry as a Callisto rule: a name, `*.domain`, an exact address (bare or as a
// /32 or /128 CIDR block), each with an optional :PORT (Callisto's; without one, 80 and 443).
// "" or what is wrong with it.
[[nodiscard]] std::string allow_out_rule(const json& entry, std::vector<std::string>& out) {
    if (!entry.is_string()) return "'network.allowOut' must be an array of strings";
    std::string text = entry.get<std::string>();
    if (is_all_traffic(entry))
        return "'network.allowOut' cannot hold " + text +
               ": Callisto opens named destinations only, never all traffic";
    if (const auto slash = text.find('/'); slash != std::string::npos) {
        // A CIDR block: only one address wide, which is that exact address.
        const std::string address = text.substr(0, slash), bits = text.substr(slash + 1);
        const bool v6 = address.find(':') != std::string::npos;
        if (bits != (v6 ? "128" : "32"))
            return "'network.allowOut': `" + text +
                   "`: Callisto allows names and exact addresses, not address ranges (a /32 or "
                   "/128 block is one address)";
        text = v6 ? "[" + address + "]" : address;
    }
    auto rule = egress::parse_rule(text);
    if (auto* error = std::get_if<std::string>(&rule))
        return "'network.allowOut': `" + entry.get<std::string>() + "`: " + *error;
    out.push_back(std::get<egress::allow_rule>(rule).text);
    return {};
}

// The create body's allow_internet_access and network ({allowOut, denyOut, rules,
// egressProxy, allowPublicTraffic, maskRequestHost, httpsPorts}, as e2b 2.x sends them) onto
// the context's network allowance. Callisto denies every destination not listed: that is
// E2B's denyOut of all traffic, always. What that cannot express is refused, naming it.
std::string read_network(const json& doc, std::vector<std::string>& allow) {
    constexpr std::size_t max_rules = 64;
    // allow_internet_access: false is what Callisto does anyway; true (the Python SDK's
    // default, sent with every create) asks for nothing in particular, and gets no more than
    // network.allowOut lists.
    if (const json* a = member(doc, "allow_internet_access"); a && !a->is_boolean())
        return "'allow_internet_access' must be a boolean";
    const json* network = member(doc, "network");
    if (!network) return {};
    if (!network->is_object()) return "'network' must be an object";
    for (const auto& [name, value] : network->items()) {
        if (value.is_null()) continue;
        if (name == "allowOut" || name == "denyOut") {
            if (!value.is_array()) return "'network." + name + "' must be an array of strings";
        } else if (name == "rules") {
            if (!value.is_object()) return "'network.rules' must be an object";
            if (!value.empty())
                return "'network.rules' (request transforms) cannot be honoured: Callisto's "
                       "egress proxy relays requests unchanged";
        } else if (name == "egressProxy") {
            return "'network.egressProxy' cannot be honoured: Callisto's own egress proxy "
                   "carries every connection";
        } else if (name == "allowPublicTraffic") {
            if (!value.is_boolean()) return "'network.allowPublicTraffic' must be a boolean";
            if (value.get<bool>())
                return "'network.allowPublicTraffic': true cannot be honoured: a sandbox here is "
                       "reached only with its access token";
        } else if (name == "maskRequestHost") {
            return "'network.maskRequestHost' cannot be honoured: a sandbox here serves no "
                   "ports of its own";
        } else if (name == "httpsPorts") {
            if (!value.is_array()) return "'network.httpsPorts' must be an array of ports";
            if (!value.empty())
                return "'network.httpsPorts' cannot be honoured: a sandbox here serves no ports "
                       "of its own";
        } else {
            return "'network' has an unknown member '" + name + "'";
        }
    }
    if (const json* deny = member(*network, "denyOut"))
        for (const auto& entry : *deny) {
            if (!entry.is_string()) return "'network.denyOut' must be an array of strings";
            if (!is_all_traffic(entry))
                return "'network.denyOut': `" + entry.get<std::string>() +
                       "` cannot be honoured: Callisto denies every destination not in "
                       "allowOut, and cannot deny some while allowing the rest (denyOut may "
                       "only be 0.0.0.0/0 or ::/0)";
        }
    const json* allow_out = member(*network, "allowOut");
    if (!allow_out) return {};
    if (allow_out->size() > max_rules)
        return "'network.allowOut' may hold at most " + std::to_string(max_rules) + " entries";
    for (const auto& entry : *allow_out)
        if (auto why = allow_out_rule(entry, allow); !why.empty()) return why;
    return {};
}

}  // namespace

std::optional<languages::execution_language> parse_e2b_language(std::string_view name) {
    return languages::parse_execution_language(name);
}

std::optional<create_sandbox_request> parse_create_sandbox(std::string_view body,
                                                           const request_limits& limits,
                                                           std::string& error) {
    auto doc = object_body(body, error);
    if (!doc) return std::nullopt;
    create_sandbox_request r;
    if (const json* t = member(*doc, "templateID")) {
        if (!t->is_string() || t->get_ref<const std::string&>().size() > 256) {
            error = "'templateID' must be a template's name";
            return std::nullopt;
        }
        r.template_id = t->get<std::string>();
    }
    if (const json* m = member(*doc, "metadata")) {
        if (!m->is_object()) {
            error = "'metadata' must be an object of strings";
            return std::nullopt;
        }
        std::size_t bytes = 0;
        for (const auto& [key, value] : m->items()) {
            if (!value.is_string()) {
                error = "'metadata': the value of '" + key + "' must be a string";
                return std::nullopt;
            }
            bytes += key.size() + value.get_ref<const std::string&>().size();
            r.metadata[key] = value.get<std::string>();
        }
        if (r.metadata.size() > limits.max_metadata_entries || bytes > limits.max_metadata_bytes) {
            error = "'metadata' may hold at most " + std::to_string(limits.max_metadata_entries) +
                    " entries and " + std::to_string(limits.max_metadata_bytes) + " bytes";
            return std::nullopt;
        }
    }
    auto env = env_of(*doc, "envVars", limits, error);
    if (!env) return std::nullopt;
    r.env = std::move(*env);
    if (const json* t = member(*doc, "timeout")) {
        auto s = seconds_of(*t, limits, error);
        if (!s) return std::nullopt;
        r.timeout = *s;
    }
    if (auto why = read_network(*doc, r.network_allow); !why.empty()) {
        error = std::move(why);
        return std::nullopt;
    }
    return r;
}

std::optional<std::chrono::seconds> parse_set_timeout(std::string_view body,
                                                      const request_limits& limits,
                                                      std::string& error) {
    auto doc = object_body(body, error);
    if (!doc) return std::nullopt;
    const json* t = member(*doc, "timeout");
    if (!t) {
        error = "'timeout' (seconds) is required";
        return std::nullopt;
    }
    return seconds_of(*t, limits, error);
}

std::optional<std::chrono::seconds> parse_connect(std::string_view body,
                                                  const request_limits& limits,
                                                  std::string& error) {
    error.clear();
    auto doc = object_body(body, error);
    if (!doc) return std::nullopt;
    const json* t = member(*doc, "timeout");
    if (!t) return std::nullopt;
    return seconds_of(*t, limits, error);
}

std::optional<execute_request> parse_execute(std::string_view body, const request_limits& limits,
                                             std::string& error) {
    auto doc = object_body(body, error);
    if (!doc) return std::nullopt;
    execute_request r;
    const json* code = member(*doc, "code");
    if (!code || !code->is_string()) {
        error = "'code' must be a string";
        return std::nullopt;
    }
    r.code = code->get<std::string>();
    if (auto why = interpreter::check_code(r.code, "'code'")) {
        error = *why;
        return std::nullopt;
    }
    if (const json* c = member(*doc, "context_id")) {
        if (!c->is_string()) {
            error = "'context_id' must be a string";
            return std::nullopt;
        }
        r.context_id = c->get<std::string>();
    }
    if (const json* l = member(*doc, "language")) {
        if (!l->is_string()) {
            error = "'language' must be a string";
            return std::nullopt;
        }
        r.language = parse_e2b_language(l->get_ref<const std::string&>());
        if (!r.language) {
            error = "'language' must be one of " + languages::language_list('\'');
            return std::nullopt;
        }
    }
    if (r.language && !r.context_id.empty()) {
        error = "give 'context_id' or 'language', not both";
        return std::nullopt;
    }
    auto env = env_of(*doc, "env_vars", limits, error);
    if (!env) return std::nullopt;
    r.env = std::move(*env);
    return r;
}

std::optional<create_context_request> parse_create_context(std::string_view body,
                                                           std::string& error) {
    auto doc = object_body(body, error);
    if (!doc) return std::nullopt;
    create_context_request r;
    if (const json* l = member(*doc, "language")) {
        if (!l->is_string() || !(r.language = parse_e2b_language(l->get<std::string>()))) {
            error = "'language' must be one of " + languages::language_list('\'');
            return std::nullopt;
        }
    }
    if (const json* c = member(*doc, "cwd")) {
        if (!c->is_string()) {
            error = "'cwd' must be a string";
            return std::nullopt;
        }
        r.cwd = c->get<std::string>();
    }
    return r;
}

}  // namespace callisto::gateway::e2b
