#pragma once
// Token authentication as jupyter_server does it: "Authorization: token T" (or "Bearer T")
// or "?token=T". Compared in constant time.

#include <string>
#include <string_view>

namespace callisto::gateway {

class token_auth {
public:
    // An empty token disables authentication.
    explicit token_auth(std::string token);

    bool enabled() const { return !token_.empty(); }

    // `authorization` is the Authorization header value ("" if absent), `query` the raw query.
    bool authorized(std::string_view authorization, std::string_view query) const;

private:
    bool matches(std::string_view candidate) const;

    std::string token_;
    std::string token_digest_;
};

}  // namespace callisto::gateway
