#pragma once
// Token authentication as jupyter_server does it: "Authorization: token T" (or "Bearer T")
// or "?token=T", compared in constant time; and, for browsers' WebSockets, the token in the
// Sec-WebSocket-Protocol offer (gateway/http/websocket_subprotocols.hpp). Either one token for one
// admin user, or a users file: a JSON array of {"name", "token_sha256", "role": "user"|"admin",
// "max_kernels", "egress_allow": ["HOST[:PORT]", ...]}, so no plain token is ever stored.

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/user.hpp"

namespace callisto::gateway {

class token_auth {
public:
    // One token, one admin user named "admin". An empty token disables authentication
    // (everyone is that admin).
    explicit token_auth(std::string token);

    // Reads a users file; throws std::runtime_error naming the file and the problem.
    static token_auth from_users_file(const std::filesystem::path& file);

    bool enabled() const { return !anonymous_; }

    // `authorization` is the Authorization header value ("" if absent), `query` the raw query,
    // `websocket_offer` the Sec-WebSocket-Protocol header of a WebSocket upgrade ("" if absent,
    // and for any other request: request_dispatcher decides). Any of them carrying a valid
    // token is enough, as with jupyter_server's header and query.
    std::optional<user> authenticate(std::string_view authorization, std::string_view query,
                                     std::string_view websocket_offer = {}) const;

    // Lower-case hex SHA-256 of a token, as the users file stores it.
    static std::string token_sha256(std::string_view token);

    // The names of this set's users that `next` no longer has, or has with another token,
    // role or quota.
    std::set<std::string> users_changed_in(const token_auth& next) const;

private:
    struct entry {
        user who;
        std::string digest;  // raw SHA-256 of the token
    };
    token_auth() = default;
    std::optional<user> match(std::string_view candidate) const;

    std::vector<entry> entries_;
    bool anonymous_ = false;
};

}  // namespace callisto::gateway
