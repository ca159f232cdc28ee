#include "gateway/egress/address_classifier.hpp"

#include <cstdio>
#include <vector>

namespace callisto::gateway::egress {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
unsigned hex_value(char c) {
    if (is_digit(c)) return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    return static_cast<unsigned>(c - 'A' + 10);
}

// One part of an inet_aton spelling: decimal, 0x hex or 0-led octal. Values past 2^32 are
// refused as they are read, so no part can wrap around into a small address.
std::optional<std::uint64_t> parse_ipv4_part(std::string_view part) {
    if (part.empty()) return std::nullopt;
    unsigned base = 10;
    if (part.size() > 2 && part[0] == '0' && (part[1] == 'x' || part[1] == 'X')) {
        base = 16;
        part.remove_prefix(2);
    } else if (part.size() > 1 && part[0] == '0') {
        base = 8;
        part.remove_prefix(1);
    }
    std::uint64_t value = 0;
    for (char c : part) {
        unsigned digit;
        if (base == 16) {
            if (!is_hex(c)) return std::nullopt;
            digit = hex_value(c);
        } else {
            if (!is_digit(c)) return std::nullopt;
            digit = static_cast<unsigned>(c - '0');
            if (digit >= base) return std::nullopt;
        }
        value = value * base + digit;
        if (value > 0xffffffffULL) return std::nullopt;
    }
    return value;
}

// Strict dotted decimal, as inet_pton reads the IPv4 tail of an IPv6 address: four parts,
// no leading zeros.
std::optional<std::uint32_t> parse_dotted_quad(std::string_view text) {
    std::uint32_t value = 0;
    int parts = 0;
    while (true) {
        const auto dot = text.find('.');
        const auto part = text.substr(0, dot);
        if (part.empty() || part.size() > 3 || (part.size() > 1 && part[0] == '0'))
            return std::nullopt;
        unsigned n = 0;
        for (char c : part) {
            if (!is_digit(c)) return std::nullopt;
            n = n * 10 + static_cast<unsigned>(c - '0');
        }
        if (n > 255) return std::nullopt;
        value = (value << 8) | n;
        ++parts;
        if (dot == std::string_view::npos) break;
        text.remove_prefix(dot + 1);
    }
    if (parts != 4) return std::nullopt;
    return value;
}

// Hex groups separated by ':' (one side of a '::'), the last possibly a dotted quad.
bool parse_groups(std::string_view text, std::vector<std::uint16_t>& groups, bool& saw_v4) {
    if (text.empty()) return true;
    while (true) {
        const auto colon = text.find(':');
        const auto group = text.substr(0, colon);
        if (colon == std::string_view::npos && group.find('.') != std::string_view::npos) {
            const auto v4 = parse_dotted_quad(group);
            if (!v4) return false;
            groups.push_back(static_cast<std::uint16_t>(*v4 >> 16));
            groups.push_back(static_cast<std::uint16_t>(*v4 & 0xffff));
            saw_v4 = true;
            return true;
        }
        if (group.empty() || group.size() > 4) return false;
        unsigned n = 0;
        for (char c : group) {
            if (!is_hex(c)) return false;
            n = n * 16 + hex_value(c);
        }
        groups.push_back(static_cast<std::uint16_t>(n));
        if (colon == std::string_view::npos) return true;
        text.remove_prefix(colon + 1);
    }
}

bool in_v4(std::uint32_t value, std::uint32_t prefix, int bits) {
    const std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
    return (value & mask) == prefix;
}

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
    return (a << 24) | (b << 16) | (c << 8) | d;
}

address_class classify_v4(std::uint32_t a) {
    if (a == 0) return address_class::unspecified;
    if (in_v4(a, v4(0, 0, 0, 0), 8)) return address_class::this_network;
    if (in_v4(a, v4(127, 0, 0, 0), 8)) return address_class::loopback;
    if (in_v4(a, v4(10, 0, 0, 0), 8) || in_v4(a, v4(172, 16, 0, 0), 12) ||
        in_v4(a, v4(192, 168, 0, 0), 16))
        return address_class::private_network;
    if (in_v4(a, v4(100, 64, 0, 0), 10)) return address_class::shared;
    if (a == v4(169, 254, 169, 254)) return address_class::cloud_metadata;
    if (in_v4(a, v4(169, 254, 0, 0), 16)) return address_class::link_local;
    if (in_v4(a, v4(192, 0, 0, 0), 24)) return address_class::protocol_assignments;
    if (in_v4(a, v4(192, 0, 2, 0), 24) || in_v4(a, v4(198, 51, 100, 0), 24) ||
        in_v4(a, v4(203, 0, 113, 0), 24))
        return address_class::documentation;
    if (in_v4(a, v4(198, 18, 0, 0), 15)) return address_class::benchmarking;
    if (in_v4(a, v4(192, 88, 99, 0), 24)) return address_class::relay_anycast;
    if (in_v4(a, v4(224, 0, 0, 0), 4)) return address_class::multicast;
    if (a == v4(255, 255, 255, 255)) return address_class::broadcast;
    if (in_v4(a, v4(240, 0, 0, 0), 4)) return address_class::reserved;
    return address_class::global;
}

// Whether the first `bits` bits of `b` equal those of `prefix` (given as up to 16 bytes).
bool in_v6(const std::array<std::uint8_t, 16>& b, std::initializer_list<std::uint8_t> prefix,
           int bits) {
    auto p = prefix.begin();
    for (int i = 0; bits > 0; ++i, bits -= 8) {
        const std::uint8_t want = p != prefix.end() ? *p++ : 0;
        const std::uint8_t mask = bits >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - bits));
        if ((b[static_cast<std::size_t>(i)] & mask) != (want & mask)) return false;
    }
    return true;
}

std::uint32_t v4_at(const std::array<std::uint8_t, 16>& b, std::size_t at) {
    return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) |
           (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

}  // namespace

ip_address ip_address::v4_from(std::uint32_t host_order) {
    ip_address a;
    a.bytes[0] = static_cast<std::uint8_t>(host_order >> 24);
    a.bytes[1] = static_cast<std::uint8_t>(host_order >> 16);
    a.bytes[2] = static_cast<std::uint8_t>(host_order >> 8);
    a.bytes[3] = static_cast<std::uint8_t>(host_order);
    return a;
}

std::uint32_t ip_address::v4_value() const { return v4_at(bytes, 0); }

std::string ip_address::to_string() const {
    char out[64];
    if (!v6) {
        std::snprintf(out, sizeof out, "%u.%u.%u.%u", bytes[0], bytes[1], bytes[2], bytes[3]);
        return out;
    }
    if (in_v6(bytes, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96)) {
        std::snprintf(out, sizeof out, "::ffff:%u.%u.%u.%u", bytes[12], bytes[13], bytes[14],
                      bytes[15]);
        return out;
    }
    std::uint16_t groups[8];
    for (int i = 0; i < 8; ++i)
        groups[i] = static_cast<std::uint16_t>(bytes[static_cast<std::size_t>(2 * i)] << 8 |
                                               bytes[static_cast<std::size_t>(2 * i + 1)]);
    // RFC 5952: the longest run of two or more zero groups (the first of equals) becomes ::.
    int best = -1, best_length = 1;
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && groups[j] == 0) ++j;
        if (j - i > best_length) best = i, best_length = j - i;
        i = j == i ? i + 1 : j;
    }
    std::string text;
    for (int i = 0; i < 8; ++i) {
        if (i == best) {
            text += "::";
            i += best_length - 1;
            continue;
        }
        if (!text.empty() && text.back() != ':') text += ':';
        std::snprintf(out, sizeof out, "%x", groups[i]);
        text += out;
    }
    return text;
}

std::optional<ip_address> parse_ipv4(std::string_view text) {
    if (!text.empty() && text.back() == '.') text.remove_suffix(1);
    if (text.empty()) return std::nullopt;
    std::uint64_t parts[4];
    int count = 0;
    while (true) {
        if (count == 4) return std::nullopt;
        const auto dot = text.find('.');
        const auto part = parse_ipv4_part(text.substr(0, dot));
        if (!part) return std::nullopt;
        parts[count++] = *part;
        if (dot == std::string_view::npos) break;
        text.remove_prefix(dot + 1);
    }
    std::uint64_t value = 0;
    for (int i = 0; i < count - 1; ++i) {
        if (parts[i] > 255) return std::nullopt;
        value |= parts[i] << (8 * (3 - i));
    }
    // The last part fills the bytes the others left: 32, 24, 16 or 8 bits.
    const int last_bits = 8 * (5 - count);
    if (last_bits < 32 && (parts[count - 1] >> last_bits) != 0) return std::nullopt;
    value |= parts[count - 1];
    return ip_address::v4_from(static_cast<std::uint32_t>(value));
}

std::optional<ip_address> parse_ipv6(std::string_view text) {
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']')
        text = text.substr(1, text.size() - 2);
    if (text.empty() || text.size() > 45) return std::nullopt;
    std::vector<std::uint16_t> head, tail;
    bool head_v4 = false, tail_v4 = false;
    const auto gap = text.find("::");
    if (gap == std::string_view::npos) {
        if (!parse_groups(text, head, head_v4) || head.size() != 8) return std::nullopt;
    } else {
        const auto before = text.substr(0, gap), after = text.substr(gap + 2);
        if (after.find("::") != std::string_view::npos) return std::nullopt;
        if (!parse_groups(before, head, head_v4) || head_v4) return std::nullopt;
        if (!parse_groups(after, tail, tail_v4)) return std::nullopt;
        // `::` stands for at least one zero group.
        if (head.size() + tail.size() > 7) return std::nullopt;
    }
    ip_address a;
    a.v6 = true;
    std::size_t at = 0;
    for (auto g : head) {
        a.bytes[at++] = static_cast<std::uint8_t>(g >> 8);
        a.bytes[at++] = static_cast<std::uint8_t>(g);
    }
    at = 16 - 2 * tail.size();
    for (auto g : tail) {
        a.bytes[at++] = static_cast<std::uint8_t>(g >> 8);
        a.bytes[at++] = static_cast<std::uint8_t>(g);
    }
    return a;
}

std::string_view to_string(host_error error) {
    switch (error) {
        case host_error::empty: return "empty host";
        case host_error::too_long: return "host name too long";
        case host_error::bad_character: return "bad character in host name";
        case host_error::empty_label: return "empty label in host name";
        case host_error::bad_address: return "malformed address";
    }
    return "bad host";
}

std::variant<host, host_error> parse_host(std::string_view text) {
    if (text.empty()) return host_error::empty;
    if (text.front() == '[' || text.find(':') != std::string_view::npos) {
        if (text.front() != '[' || text.back() != ']') return host_error::bad_address;
        if (auto a = parse_ipv6(text)) return host{*a};
        return host_error::bad_address;
    }
    if (text.back() == '.') text.remove_suffix(1);
    if (text.empty()) return host_error::empty_label;
    if (text.size() > 253) return host_error::too_long;
    std::string name;
    name.reserve(text.size());
    std::string_view last_label;
    for (std::string_view rest = text;;) {
        const auto dot = rest.find('.');
        const auto label = rest.substr(0, dot);
        if (label.empty()) return host_error::empty_label;
        if (label.size() > 63) return host_error::too_long;
        for (char c : label) {
            const bool ok = is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            c == '-' || c == '_';
            if (!ok) return host_error::bad_character;
        }
        last_label = label;
        if (dot == std::string_view::npos) break;
        rest.remove_prefix(dot + 1);
    }
    bool numeric = !last_label.empty();
    for (char c : last_label) numeric = numeric && is_digit(c);
    if (last_label.size() >= 2 && last_label[0] == '0' &&
        (last_label[1] == 'x' || last_label[1] == 'X')) {
        numeric = true;
        for (char c : last_label.substr(2)) numeric = numeric && is_hex(c);
    }
    if (numeric) {
        if (auto a = parse_ipv4(text)) return host{*a};
        return host_error::bad_address;
    }
    for (char c : text) name += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    return host{host_name{std::move(name)}};
}

std::string_view to_string(address_class c) {
    switch (c) {
        case address_class::global: return "global";
        case address_class::unspecified: return "unspecified";
        case address_class::this_network: return "this-network";
        case address_class::loopback: return "loopback";
        case address_class::private_network: return "private";
        case address_class::shared: return "shared (carrier-grade NAT)";
        case address_class::link_local: return "link-local";
        case address_class::cloud_metadata: return "cloud metadata";
        case address_class::protocol_assignments: return "IETF protocol assignments";
        case address_class::documentation: return "documentation";
        case address_class::benchmarking: return "benchmarking";
        case address_class::relay_anycast: return "6to4 relay anycast";
        case address_class::multicast: return "multicast";
        case address_class::reserved: return "reserved";
        case address_class::broadcast: return "broadcast";
        case address_class::unique_local: return "unique-local";
        case address_class::site_local: return "site-local";
        case address_class::ipv4_compatible: return "IPv4-compatible";
        case address_class::local_nat64: return "local-use NAT64";
    }
    return "unknown";
}

classification classify(const ip_address& address) {
    if (!address.v6) return {classify_v4(address.v4_value()), address, ""};
    const auto& b = address.bytes;
    const auto embedded = [&](std::size_t at, std::string_view how) {
        const auto inner = ip_address::v4_from(v4_at(b, at));
        return classification{classify_v4(inner.v4_value()), inner, how};
    };
    const auto own = [&](address_class c) { return classification{c, address, ""}; };
    if (in_v6(b, {}, 128)) return own(address_class::unspecified);
    if (in_v6(b, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128))
        return own(address_class::loopback);
    if (in_v6(b, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96))
        return embedded(12, "IPv4-mapped");
    if (in_v6(b, {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0}, 96)) return embedded(12, "SIIT");
    if (in_v6(b, {}, 96)) return own(address_class::ipv4_compatible);
    if (in_v6(b, {0, 0x64, 0xff, 0x9b}, 96)) return embedded(12, "NAT64");
    if (in_v6(b, {0, 0x64, 0xff, 0x9b, 0, 1}, 48)) return own(address_class::local_nat64);
    if (in_v6(b, {0x20, 0x02}, 16)) return embedded(2, "6to4");
    if (in_v6(b, {0x01, 0x00}, 64)) return own(address_class::reserved);
    if (in_v6(b, {0x20, 0x01, 0x0d, 0xb8}, 32)) return own(address_class::documentation);
    if (in_v6(b, {0x3f, 0xff}, 20)) return own(address_class::documentation);
    if (in_v6(b, {0x20, 0x01, 0x00, 0x02, 0, 0}, 48)) return own(address_class::benchmarking);
    if (in_v6(b, {0x20, 0x01}, 23)) return own(address_class::reserved);
    if (in_v6(b, {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}, 128))
        return own(address_class::cloud_metadata);
    if (in_v6(b, {0xfc}, 7)) return own(address_class::unique_local);
    if (in_v6(b, {0xfe, 0x80}, 10)) return own(address_class::link_local);
    if (in_v6(b, {0xfe, 0xc0}, 10)) return own(address_class::site_local);
    if (in_v6(b, {0xff}, 8)) return own(address_class::multicast);
    return own(address_class::global);
}

}  // namespace callisto::gateway::egress
