#include "gateway/token_auth.hpp"

#include <fstream>
#include <set>
#include <stdexcept>

#include <openssl/crypto.h>
#include <nlohmann/json.hpp>

#include "common/sha256.hpp"
#include "gateway/egress/egress_allowlist.hpp"
#include "gateway/http/router.hpp"
#include "gateway/http/websocket_subprotocols.hpp"

namespace callisto::gateway {
namespace {

std::string_view strip_scheme(std::string_view value) {
    for (std::string_view scheme : {"token ", "Token ", "bearer ", "Bearer "})
        if (value.substr(0, scheme.size()) == scheme) {
            value.remove_prefix(scheme.size());
            while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
            return value;
        }
    return {};
}

bool decode_hex(const std::string& hex, std::string& out) {
    if (hex.size() != 64) return false;
    out.clear();
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        auto nibble = [](char c) {
            return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        };
        int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out.push_back(static_cast<char>(hi * 16 + lo));
    }
    return true;
}

}  // namespace

std::string token_auth::token_sha256(std::string_view token) { return sha256_hex(token); }

token_auth::token_auth(std::string token) {
    if (token.empty()) {
        anonymous_ = true;
        return;
    }
    entries_.push_back({user{"admin", true, 0}, sha256(token)});
}

token_auth token_auth::from_users_file(const std::filesystem::path& file) {
    auto fail = [&](const std::string& why) {
        throw std::runtime_error("users file " + file.string() + ": " + why);
    };
    std::ifstream in(file);
    if (!in) fail("cannot be read");
    auto doc = nlohmann::json::parse(in, nullptr, false);
    if (doc.is_discarded() || !doc.is_array() || doc.empty())
        fail("must be a non-empty JSON array of users");
    token_auth auth;
    std::set<std::string> names;
    for (const auto& u : doc) {
        if (!u.is_object() || !u.contains("name") || !u["name"].is_string() ||
            u["name"].get<std::string>().empty())
            fail("every user needs a non-empty string \"name\"");
        const std::string name = u["name"];
        if (!names.insert(name).second) fail("user '" + name + "' appears twice");
        entry e;
        e.who.name = name;
        if (!u.contains("token_sha256") || !u["token_sha256"].is_string() ||
            !decode_hex(u["token_sha256"].get<std::string>(), e.digest))
            fail("user '" + name +
                 "' needs \"token_sha256\": 64 lower-case hex characters "
                 "(callisto --hash-token=T prints it)");
        const std::string role = u.value("role", "user");
        if (role != "user" && role != "admin")
            fail("user '" + name + "': role must be user or admin");
        e.who.admin = role == "admin";
        if (u.contains("max_kernels")) {
            if (!u["max_kernels"].is_number_unsigned())
                fail("user '" + name + "': max_kernels must be a number");
            e.who.max_kernels = u["max_kernels"].get<std::size_t>();
        }
        if (u.contains("egress_allow")) {
            // Within the server's --egress-allow, checked where a context asks: a user's list
            // only ever narrows.
            const auto& list = u["egress_allow"];
            if (!list.is_array())
                fail("user '" + name + "': egress_allow must be an array of HOST[:PORT] rules");
            std::vector<std::string> rules;
            for (const auto& item : list) {
                if (!item.is_string())
                    fail("user '" + name + "': egress_allow must be an array of HOST[:PORT] rules");
                auto rule = egress::parse_rule(item.get<std::string>());
                if (auto* error = std::get_if<std::string>(&rule))
                    fail("user '" + name + "': egress_allow `" + item.get<std::string>() +
                         "`: " + *error);
                rules.push_back(std::get<egress::allow_rule>(rule).text);
            }
            e.who.egress_allow = std::move(rules);
        }
        auth.entries_.push_back(std::move(e));
    }
    return auth;
}

std::set<std::string> token_auth::users_changed_in(const token_auth& next) const {
    std::set<std::string> changed;
    for (const auto& e : entries_) {
        bool same = false;
        for (const auto& n : next.entries_)
            if (n.who.name == e.who.name)
                same = n.digest == e.digest && n.who.admin == e.who.admin &&
                       n.who.max_kernels == e.who.max_kernels &&
                       n.who.egress_allow == e.who.egress_allow;
        if (!same) changed.insert(e.who.name);
    }
    return changed;
}

std::optional<user> token_auth::match(std::string_view candidate) const {
    if (candidate.empty()) return std::nullopt;
    const std::string digest = sha256(candidate);
    std::optional<user> found;
    // Every entry is compared, in constant time each, whoever matches.
    for (const auto& e : entries_)
        if (CRYPTO_memcmp(digest.data(), e.digest.data(), digest.size()) == 0) found = e.who;
    return found;
}

std::optional<user> token_auth::authenticate(std::string_view authorization, std::string_view query,
                                             std::string_view websocket_offer) const {
    if (anonymous_) return user{"admin", true, 0};
    if (auto u = match(strip_scheme(authorization))) return u;
    if (auto u = match(token_in_subprotocols(websocket_offer))) return u;
    return match(query_param(query, "token"));
}

}  // namespace callisto::gateway
