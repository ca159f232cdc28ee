#pragma once
// What an egress destination is: an IP address however a client spelled it, or a DNS name,
// and whether the address lies in a range a kernel must never reach on its own (loopback, the
// cloud metadata address, private networks, ...). Pure: no sockets, no Boost, so every
// spelling is unit-tested (tests/egress/address_classifier_tests.cpp).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace callisto::gateway::egress {

// An IPv4 or IPv6 address, held as bytes in network order (IPv4 in the first four).
struct ip_address {
    bool v6 = false;
    std::array<std::uint8_t, 16> bytes{};

    static ip_address v4_from(std::uint32_t host_order);
    std::uint32_t v4_value() const;  // host order; only for v6 == false

    // The one canonical spelling: dotted quad, or RFC 5952 IPv6 (lower case, longest run of
    // zero groups as ::, a mapped IPv4 address as ::ffff:a.b.c.d).
    std::string to_string() const;

    friend bool operator==(const ip_address&, const ip_address&) = default;
};

// An IPv4 address in every spelling inet_aton(3) and browsers accept: one to four parts,
// each decimal, hex (0x..) or octal (leading 0); the last part fills the remaining bytes
// (`127.1`, `2130706433`, `0x7f.1`, `0177.0.0.1`). A trailing dot is allowed. nullopt for
// anything else, including a part out of range and `08`.
std::optional<ip_address> parse_ipv4(std::string_view text);

// An IPv6 address: RFC 4291 text, with an embedded dotted IPv4 tail (`::ffff:127.0.0.1`),
// with or without brackets. No zone id (`%eth0`): a scoped address is never a destination.
std::optional<ip_address> parse_ipv6(std::string_view text);

// The host a client named: an address in any spelling above, or a DNS name (lower-cased,
// without its trailing dot).
struct host_name {
    std::string name;
    friend bool operator==(const host_name&, const host_name&) = default;
};
using host = std::variant<ip_address, host_name>;

enum class host_error {
    empty,
    too_long,       // more than 253 characters, or a label of more than 63
    bad_character,  // outside [A-Za-z0-9-_.] in a name
    empty_label,    // `a..b`, a leading dot
    bad_address,    // looks like an address (brackets, a colon, a numeric last label) but is not
};
std::string_view to_string(host_error error);

// As WHATWG's URL host parser decides: a name whose last label is numeric is an IPv4 address
// or invalid, so `1.2.3.999` and `0x1.08` are refused rather than resolved as names.
std::variant<host, host_error> parse_host(std::string_view text);

// The ranges (IANA's special-purpose address registries) a kernel may not reach unless an
// admin writes the exact address.
enum class address_class {
    global,                // none of the below: a public address
    unspecified,           // 0.0.0.0, ::
    this_network,          // 0.0.0.0/8 (Linux connects 0.x to the local host)
    loopback,              // 127.0.0.0/8, ::1
    private_network,       // 10/8, 172.16/12, 192.168/16 (RFC 1918)
    shared,                // 100.64/10, carrier-grade NAT (RFC 6598)
    link_local,            // 169.254/16, fe80::/10
    cloud_metadata,        // 169.254.169.254, fd00:ec2::254: the instance's credentials
    protocol_assignments,  // 192.0.0.0/24
    documentation,         // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32
    benchmarking,          // 198.18/15, 2001:2::/48
    relay_anycast,         // 192.88.99.0/24 (6to4 relays, deprecated)
    multicast,             // 224/4, ff00::/8
    reserved,              // 240/4, 100::/64 (discard), 2001::/23 IETF blocks (Teredo, ORCHID)
    broadcast,             // 255.255.255.255
    unique_local,          // fc00::/7
    site_local,            // fec0::/10 (deprecated, still routed by some stacks)
    ipv4_compatible,       // ::a.b.c.d (deprecated, RFC 4291 2.5.5.1)
    local_nat64,           // 64:ff9b:1::/48 (RFC 8215: a network's own translator)
};
std::string_view to_string(address_class c);

// An address's class, and the address that decided it: an IPv6 address that carries an IPv4
// one (IPv4-mapped ::ffff:a.b.c.d, SIIT ::ffff:0:a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4
// 2002:aabb:ccdd::) reaches that IPv4 address, so that address is classified.
struct classification {
    address_class kind = address_class::global;
    ip_address decided_by;       // the address itself, or the IPv4 address it embeds
    std::string_view embedding;  // "" or "IPv4-mapped", "SIIT", "NAT64", "6to4"

    bool forbidden() const { return kind != address_class::global; }
};
classification classify(const ip_address& address);

}  // namespace callisto::gateway::egress
