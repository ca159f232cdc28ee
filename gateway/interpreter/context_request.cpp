#include "gateway/interpreter/context_request.hpp"

#include <nlohmann/json.hpp>

#include "gateway/egress/egress_allowlist.hpp"
#include "gateway/interpreter/context_fields.hpp"
#include "gateway/interpreter/execution_request.hpp"
#include "gateway/interpreter/json_body.hpp"

namespace callisto::gateway::interpreter {

namespace {

// {"allow": ["HOST[:PORT]", ...]}: "" or what is wrong with it.
[[nodiscard]] std::string read_network(const nlohmann::json& network,
                                       std::vector<std::string>& out) {
    constexpr std::size_t max_rules = 64;
    if (!network.is_object()) return "must be an object: {\"allow\": [\"HOST[:PORT]\", ...]}";
    for (const auto& [name, value] : network.items())
        if (name != "allow") return "has an unknown field '" + name + "'";
    if (!network.contains("allow") || network["allow"].is_null()) return {};
    const auto& allow = network["allow"];
    if (!allow.is_array()) return "allow must be an array of HOST[:PORT] strings";
    if (allow.size() > max_rules)
        return "allow may hold at most " + std::to_string(max_rules) + " rules";
    for (const auto& item : allow) {
        if (!item.is_string()) return "allow must be an array of HOST[:PORT] strings";
        auto rule = egress::parse_rule(item.get<std::string>());
        if (auto* error = std::get_if<std::string>(&rule))
            return "allow: `" + item.get<std::string>() + "`: " + *error;
        out.push_back(std::get<egress::allow_rule>(rule).text);
    }
    return {};
}

}  // namespace

std::optional<context_request> parse_context_request(std::string_view body, std::string& error) {
    context_request req;
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return req;
    auto doc = parse_json_body(body, error);
    if (!doc) return std::nullopt;
    for (auto& [name, value] : doc->items()) {
        if (!is_context_field(name) && name != "language" && name != "from_snapshot" &&
            name != "network") {
            error = "unknown field '" + name + "'";
            return std::nullopt;
        }
    }
    if (!read_context_fields(*doc, req, error)) return std::nullopt;
    if (doc->contains("language") && !(*doc)["language"].is_null()) {
        const auto& l = (*doc)["language"];
        if (!l.is_string() ||
            !(req.language = languages::parse_execution_language(l.get<std::string>()))) {
            error = "'language' must be one of " + language_choices();
            return std::nullopt;
        }
    }
    if (doc->contains("from_snapshot") && !(*doc)["from_snapshot"].is_null()) {
        const auto& s = (*doc)["from_snapshot"];
        if (!s.is_string() || s.get<std::string>().empty() || s.get<std::string>().size() > 64) {
            error = "'from_snapshot' must be a snapshot id (GET /v1/snapshots lists them)";
            return std::nullopt;
        }
        req.from_snapshot = s.get<std::string>();
    }
    if (doc->contains("network") && !(*doc)["network"].is_null()) {
        if (auto why = read_network((*doc)["network"], req.network_allow); !why.empty()) {
            error = "'network' " + why;
            return std::nullopt;
        }
    }
    return req;
}

std::optional<std::string> network_refusal(const std::vector<std::string>& asked,
                                           const std::vector<std::string>& server,
                                           const std::optional<std::vector<std::string>>& user) {
    const auto rules = egress::parse_rules(asked);
    auto join = [](const std::vector<std::string>& texts) {
        std::string out;
        for (const auto& t : texts) out += (out.empty() ? "" : ", ") + t;
        return out;
    };
    if (auto over = egress::beyond(rules, egress::parse_rules(server)); !over.empty())
        return "network.allow asks for more than this server allows (--egress-allow): " +
               join(over);
    if (user)
        if (auto over = egress::beyond(rules, egress::parse_rules(*user)); !over.empty())
            return "network.allow asks for more than your user may have (egress_allow in the "
                   "users file): " +
                   join(over);
    return std::nullopt;
}

}  // namespace callisto::gateway::interpreter
