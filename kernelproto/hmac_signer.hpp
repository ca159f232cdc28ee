#pragma once
// HMAC-SHA256 signatures of the four JSON parts, as the Jupyter wire protocol requires.
// An empty key disables signing (signature ""), as in jupyter_client.

#include <array>
#include <string>
#include <string_view>

namespace callisto::kernelproto {

class hmac_signer {
public:
    explicit hmac_signer(std::string key = {});

    bool enabled() const { return !key_.empty(); }

    // 64 lowercase hex chars over header, parent_header, metadata, content (in that order);
    // "" when signing is disabled.
    std::string sign(const std::array<std::string_view, 4>& parts) const;

    // Constant-time comparison (CRYPTO_memcmp) after a length check.
    // With signing disabled, any signature is accepted.
    bool verify(const std::array<std::string_view, 4>& parts, std::string_view signature) const;

    // HMAC-SHA256 of arbitrary data as raw bytes (32); used by the RFC 4231 tests.
    static std::string hmac_sha256(std::string_view key, std::string_view data);

private:
    std::string key_;
};

}  // namespace callisto::kernelproto
