#include "gateway/http/websocket_subprotocols.hpp"

namespace callisto::gateway {
namespace {

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Calls fn on each entry of the offer until it returns true; returns whether one did.
template <typename Fn>
bool any_entry(std::string_view offer, Fn fn) {
    for (;;) {
        const auto comma = offer.find(',');
        if (fn(trimmed(offer.substr(0, comma)))) return true;
        if (comma == std::string_view::npos) return false;
        offer.remove_prefix(comma + 1);
    }
}

int nibble(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

}  // namespace

bool offers_subprotocol(std::string_view offer, std::string_view name) {
    return any_entry(offer, [name](std::string_view entry) { return entry == name; });
}

std::string token_in_subprotocols(std::string_view offer) {
    std::string token;
    any_entry(offer, [&token](std::string_view entry) {
        if (entry.substr(0, token_subprotocol_prefix.size()) != token_subprotocol_prefix)
            return false;
        entry.remove_prefix(token_subprotocol_prefix.size());
        if (entry.empty() || entry.size() % 2 != 0) return true;  // the first one decides
        std::string bytes;
        for (std::size_t i = 0; i < entry.size(); i += 2) {
            const int hi = nibble(entry[i]), lo = nibble(entry[i + 1]);
            if (hi < 0 || lo < 0) return true;
            bytes.push_back(static_cast<char>(hi * 16 + lo));
        }
        token = std::move(bytes);
        return true;
    });
    return token;
}

}  // namespace callisto::gateway
