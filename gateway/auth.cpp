#include "gateway/auth.hpp"

#include <openssl/crypto.h>

#include "gateway/router.hpp"
#include "kernelproto/hmac_signer.hpp"

namespace callisto::gateway {
namespace {

// Comparing digests rather than the tokens keeps the comparison constant-time even when the
// lengths differ.
std::string digest(std::string_view text) {
    return kernelproto::hmac_signer::hmac_sha256("callisto-token-compare", text);
}

std::string_view strip_scheme(std::string_view value) {
    for (std::string_view scheme : {"token ", "Token ", "bearer ", "Bearer "})
        if (value.substr(0, scheme.size()) == scheme) {
            value.remove_prefix(scheme.size());
            while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
            return value;
        }
    return {};
}

}  // namespace

token_auth::token_auth(std::string token)
    : token_(std::move(token)), token_digest_(token_.empty() ? "" : digest(token_)) {}

bool token_auth::matches(std::string_view candidate) const {
    if (candidate.empty()) return false;
    std::string d = digest(candidate);
    return d.size() == token_digest_.size() &&
           CRYPTO_memcmp(d.data(), token_digest_.data(), d.size()) == 0;
}

bool token_auth::authorized(std::string_view authorization, std::string_view query) const {
    if (!enabled()) return true;
    if (matches(strip_scheme(authorization))) return true;
    return matches(query_param(query, "token"));
}

}  // namespace callisto::gateway
