#pragma once
// Which destinations a kernel may reach through the egress proxy: an admin's rules
// (HOST[:PORT], `*.example.org`, exact addresses) over the address classifier's ranges, and
// for each attempt a decision that names the rule that decided it (the 403's body and the
// audit log say it). Pure: tests/egress/egress_allowlist_tests.cpp.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/egress/address_classifier.hpp"

namespace callisto::gateway::egress {

// HOST[:PORT] split: `example.org:443`, `[::1]:8080`, `10.0.0.1`. An IPv6 address must be
// bracketed (otherwise its colons and the port's are ambiguous). The host is not yet checked.
struct authority {
    std::string_view host;
    std::optional<std::uint16_t> port;
};
std::variant<authority, std::string> split_authority(std::string_view text);

// One rule of the allowlist, as an admin writes it:
//   pypi.org            that name, on ports 80 and 443 (a rule without a port allows the web's)
//   pypi.org:8080       that name on that port only
//   *.example.org       every name below example.org (not example.org itself), 80 and 443
//   127.0.0.1:8080      that exact address, the only way to reach a forbidden range
//   [::1]:8080          the same for IPv6
// Names are lower-cased and lose a trailing dot; addresses must be written canonically
// (`127.0.0.1`, not `127.1`), so what a rule allows is what it says.
struct allow_rule {
    enum class kind { name, wildcard, address };
    kind what = kind::name;
    std::string host;  // the name, the wildcard's suffix with its dot (`.example.org`), or
                       // the address's canonical text
    std::optional<ip_address> address;  // for kind::address
    std::optional<std::uint16_t> port;  // nullopt: 80 and 443
    std::string text;                   // the rule in canonical form, as decisions name it

    bool allows_port(std::uint16_t p) const { return port ? *port == p : p == 80 || p == 443; }
};
std::variant<allow_rule, std::string> parse_rule(std::string_view text);

// True when `outer` allows every destination `inner` does: a context's rule within a
// ceiling's (`*.example.org` covers `a.example.org` and `*.a.example.org`, a rule without a
// port covers 80 and 443 only).
bool covers(const allow_rule& outer, const allow_rule& inner);
// The rules of `asked` that no rule of `ceiling` covers, each as its canonical text: what a
// refusal names.
std::vector<std::string> beyond(const std::vector<allow_rule>& asked,
                                const std::vector<allow_rule>& ceiling);
// Each text parsed (canonical texts, already checked), for covers and beyond; a bad one is
// skipped.
std::vector<allow_rule> parse_rules(const std::vector<std::string>& texts);

// Why an attempt was allowed or refused. `rule` is the allowlist entry that decided, or one
// of the built-in rules below; `reason` is one sentence for the client and the audit log.
struct decision {
    bool allowed = false;
    std::string rule;
    std::string reason;
};

// The built-in rules a refusal may name.
inline constexpr std::string_view rule_malformed_host = "malformed host";
inline constexpr std::string_view rule_not_listed = "not in the allowlist";
inline constexpr std::string_view rule_odd_spelling = "address not written canonically";
inline constexpr std::string_view rule_own_endpoint = "the gateway's own endpoint";
// Followed by the address class: "forbidden address: loopback".
inline constexpr std::string_view rule_forbidden_address = "forbidden address";

class allowlist {
public:
    allowlist() = default;  // allows nothing: the default, as without egress
    explicit allowlist(std::vector<allow_rule> rules);
    // Every rule parsed, or the first bad one's message ("rule 2 (`*.org`): ...").
    static std::variant<allowlist, std::string> parse(const std::vector<std::string>& rules);

    // An endpoint no rule can open (the gateway's own listeners): refused first. An
    // unspecified address (0.0.0.0, ::) forbids the port on every address.
    void forbid_endpoint(const ip_address& address, std::uint16_t port, std::string what);

    // The destination as the client named it (a CONNECT's or an absolute URL's host, in any
    // spelling) and its port. A name is only decided here; each address it resolves to must
    // then pass check_resolved. An address literal is decided completely.
    decision decide(std::string_view host, std::uint16_t port) const;

    // One address a name resolved to (DNS rebinding: the name's rule allowed the name, not
    // whatever it points at): a forbidden range needs an exact-address rule for it and the port.
    decision check_resolved(const ip_address& address, std::uint16_t port) const;

    const std::vector<allow_rule>& rules() const { return rules_; }

private:
    struct forbidden_endpoint {
        ip_address address;
        std::uint16_t port;
        std::string what;
    };
    const allow_rule* address_rule(const ip_address& address, std::uint16_t port,
                                   const allow_rule** other_port) const;
    std::optional<decision> own_endpoint(const ip_address& address, std::uint16_t port) const;

    std::vector<allow_rule> rules_;
    std::vector<forbidden_endpoint> forbidden_endpoints_;
};

}  // namespace callisto::gateway::egress
