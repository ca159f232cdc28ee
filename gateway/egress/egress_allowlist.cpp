#include "gateway/egress/egress_allowlist.hpp"

#include <utility>

namespace callisto::gateway::egress {

namespace {

std::optional<std::uint16_t> parse_port(std::string_view text) {
    // Digits only, no sign, no leading zero: a port is written one way.
    if (text.empty() || text.size() > 5 || text[0] == '0') return std::nullopt;
    unsigned value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

std::string with_port(std::string host, std::optional<std::uint16_t> port) {
    if (port) host += ":" + std::to_string(*port);
    return host;
}

// An address as a URL's host writes it: IPv6 in brackets.
std::string url_host(const ip_address& a) {
    return a.v6 ? "[" + a.to_string() + "]" : a.to_string();
}

std::string port_list(const allow_rule& rule) {
    return rule.port ? std::to_string(*rule.port) : "80 and 443";
}

decision refuse(std::string_view rule, std::string reason) {
    return {false, std::string(rule), std::move(reason)};
}

}  // namespace

std::variant<authority, std::string> split_authority(std::string_view text) {
    if (text.empty()) return std::string("empty host");
    authority out;
    std::string_view rest;
    if (text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos) return std::string("unclosed [ in host");
        out.host = text.substr(0, close + 1);
        rest = text.substr(close + 1);
    } else {
        const auto colon = text.find(':');
        if (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos)
            return std::string("an IPv6 address must be written in brackets: [");
        out.host = text.substr(0, colon);
        rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon);
    }
    if (out.host.empty()) return std::string("empty host");
    if (!rest.empty()) {
        if (rest.front() != ':') return std::string("unexpected text after ]");
        auto port = parse_port(rest.substr(1));
        if (!port) return std::string("port must be a number from 1 to 65535");
        out.port = port;
    }
    return out;
}

std::variant<allow_rule, std::string> parse_rule(std::string_view text) {
    auto split = split_authority(text);
    if (auto* error = std::get_if<std::string>(&split)) return *error;
    const auto [host_text, port] = std::get<authority>(split);
    allow_rule rule;
    rule.port = port;
    if (host_text.starts_with("*.")) {
        // A wildcard covers the names below a domain of at least two labels: `*.org` would
        // open a whole top-level domain, `*.1.2.3` is not a name.
        const auto suffix = host_text.substr(2);
        if (suffix.find('*') != std::string_view::npos)
            return std::string("`*` may only be the whole first label");
        auto parsed = parse_host(suffix);
        if (auto* error = std::get_if<host_error>(&parsed)) return std::string(to_string(*error));
        const auto* name = std::get_if<host_name>(&std::get<host>(parsed));
        if (!name) return std::string("a wildcard covers names, not addresses");
        if (name->name.find('.') == std::string::npos)
            return std::string("a wildcard needs a domain of two labels or more (*.example.org)");
        rule.what = allow_rule::kind::wildcard;
        rule.host = "." + name->name;
        rule.text = with_port("*" + rule.host, port);
        return rule;
    }
    if (host_text.find('*') != std::string_view::npos)
        return std::string("`*` may only be the whole first label, followed by a dot");
    auto parsed = parse_host(host_text);
    if (auto* error = std::get_if<host_error>(&parsed)) return std::string(to_string(*error));
    const auto& h = std::get<host>(parsed);
    if (const auto* address = std::get_if<ip_address>(&h)) {
        const auto canonical = url_host(*address);
        if (host_text != canonical)
            return "write the address as " + canonical + ", its canonical form";
        rule.what = allow_rule::kind::address;
        rule.address = *address;
        rule.host = address->to_string();
        rule.text = with_port(canonical, port);
        return rule;
    }
    rule.what = allow_rule::kind::name;
    rule.host = std::get<host_name>(h).name;
    rule.text = with_port(rule.host, port);
    return rule;
}

bool covers(const allow_rule& outer, const allow_rule& inner) {
    const bool ports = outer.port ? inner.port == outer.port
                                  : !inner.port || *inner.port == 80 || *inner.port == 443;
    if (!ports) return false;
    using k = allow_rule::kind;
    switch (outer.what) {
        case k::name: return inner.what == k::name && inner.host == outer.host;
        case k::address: return inner.what == k::address && inner.address == outer.address;
        case k::wildcard:
            // A name below the domain, or a wildcard on the domain or below it.
            if (inner.what == k::name)
                return inner.host.size() > outer.host.size() && inner.host.ends_with(outer.host);
            return inner.what == k::wildcard && inner.host.ends_with(outer.host);
    }
    return false;
}

std::vector<std::string> beyond(const std::vector<allow_rule>& asked,
                                const std::vector<allow_rule>& ceiling) {
    std::vector<std::string> out;
    for (const auto& rule : asked) {
        bool covered = false;
        for (const auto& c : ceiling) covered = covered || covers(c, rule);
        if (!covered) out.push_back(rule.text);
    }
    return out;
}

std::vector<allow_rule> parse_rules(const std::vector<std::string>& texts) {
    std::vector<allow_rule> out;
    for (const auto& text : texts)
        if (auto rule = parse_rule(text); auto* r = std::get_if<allow_rule>(&rule))
            out.push_back(std::move(*r));
    return out;
}

allowlist::allowlist(std::vector<allow_rule> rules) : rules_(std::move(rules)) {}

std::variant<allowlist, std::string> allowlist::parse(const std::vector<std::string>& rules) {
    std::vector<allow_rule> parsed;
    for (std::size_t i = 0; i < rules.size(); ++i) {
        auto rule = parse_rule(rules[i]);
        if (auto* error = std::get_if<std::string>(&rule))
            return "rule " + std::to_string(i + 1) + " (`" + rules[i] + "`): " + *error;
        parsed.push_back(std::move(std::get<allow_rule>(rule)));
    }
    return allowlist(std::move(parsed));
}

void allowlist::forbid_endpoint(const ip_address& address, std::uint16_t port, std::string what) {
    forbidden_endpoints_.push_back({address, port, std::move(what)});
}

const allow_rule* allowlist::address_rule(const ip_address& address, std::uint16_t port,
                                          const allow_rule** other_port) const {
    for (const auto& rule : rules_) {
        if (rule.what != allow_rule::kind::address || *rule.address != address) continue;
        if (rule.allows_port(port)) return &rule;
        if (other_port && !*other_port) *other_port = &rule;
    }
    return nullptr;
}

std::optional<decision> allowlist::own_endpoint(const ip_address& address,
                                                std::uint16_t port) const {
    // A listener on 0.0.0.0 or :: is reached through every address of the host.
    for (const auto& e : forbidden_endpoints_)
        if ((e.address == address || classify(e.address).kind == address_class::unspecified) &&
            e.port == port)
            return refuse(rule_own_endpoint,
                          url_host(address) + ":" + std::to_string(port) + " is " + e.what);
    return std::nullopt;
}

decision allowlist::decide(std::string_view host_text, std::uint16_t port) const {
    auto parsed = parse_host(host_text);
    if (auto* error = std::get_if<host_error>(&parsed))
        return refuse(rule_malformed_host, std::string(to_string(*error)));
    const auto& h = std::get<host>(parsed);
    if (const auto* address = std::get_if<ip_address>(&h)) {
        if (auto refused = own_endpoint(*address, port)) return *refused;
        // `127.1`, `2130706433`, `127.0.0.1.`: nothing legitimate spells an address so, and an
        // exact-address rule allows the address as its rule writes it.
        const auto canonical = url_host(*address);
        if (host_text != canonical)
            return refuse(rule_odd_spelling,
                          std::string(host_text) + " is " + canonical + " written another way");
        const allow_rule* other_port = nullptr;
        if (const auto* rule = address_rule(*address, port, &other_port))
            return {true, rule->text, "allowed by " + rule->text};
        if (other_port)
            return refuse(other_port->text,
                          "port " + std::to_string(port) + " is not allowed for " + canonical +
                              " (the rule allows " + port_list(*other_port) + ")");
        const auto c = classify(*address);
        if (c.forbidden())
            return refuse(
                std::string(rule_forbidden_address) + ": " + std::string(to_string(c.kind)),
                canonical + " is a " + std::string(to_string(c.kind)) +
                    " address; only an exact-address rule allows it");
        return refuse(rule_not_listed, canonical + " is not in the allowlist");
    }
    const auto& name = std::get<host_name>(h).name;
    // The exact name first, then the most specific wildcard.
    const allow_rule* matched = nullptr;
    const allow_rule* other_port = nullptr;
    for (const auto& rule : rules_) {
        if (rule.what != allow_rule::kind::name || rule.host != name) continue;
        if (rule.allows_port(port)) {
            matched = &rule;
            break;
        }
        if (!other_port) other_port = &rule;
    }
    if (!matched) {
        for (const auto& rule : rules_) {
            if (rule.what != allow_rule::kind::wildcard || !name.ends_with(rule.host) ||
                name.size() == rule.host.size())
                continue;
            if (!rule.allows_port(port)) {
                if (!other_port) other_port = &rule;
                continue;
            }
            if (!matched || rule.host.size() > matched->host.size()) matched = &rule;
        }
    }
    if (matched) return {true, matched->text, "allowed by " + matched->text};
    if (other_port)
        return refuse(other_port->text, "port " + std::to_string(port) + " is not allowed for " +
                                            name + " (the rule allows " + port_list(*other_port) +
                                            ")");
    return refuse(rule_not_listed, name + " is not in the allowlist");
}

decision allowlist::check_resolved(const ip_address& address, std::uint16_t port) const {
    if (auto refused = own_endpoint(address, port)) return *refused;
    const auto c = classify(address);
    if (!c.forbidden()) return {true, "", "a global address"};
    if (const auto* rule = address_rule(address, port, nullptr))
        return {true, rule->text, "allowed by " + rule->text};
    std::string what = address.to_string();
    if (!c.embedding.empty())
        what += " (" + std::string(c.embedding) + " " + c.decided_by.to_string() + ")";
    return refuse(std::string(rule_forbidden_address) + ": " + std::string(to_string(c.kind)),
                  "the name resolves to " + what + ", a " + std::string(to_string(c.kind)) +
                      " address; only an exact-address rule for it allows it");
}

}  // namespace callisto::gateway::egress
