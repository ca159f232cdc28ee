#include "kernelproto/hmac_signer.hpp"

#include <memory>
#include <stdexcept>
#include <utility>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

namespace callisto::kernelproto {

namespace {

constexpr std::size_t digest_size = 32;
constexpr std::size_t hex_size = 2 * digest_size;

struct mac_ctx_deleter {
    void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
};
using mac_ctx_ptr = std::unique_ptr<EVP_MAC_CTX, mac_ctx_deleter>;

// Fetching the algorithm is a provider lookup; do it once. EVP_MAC is immutable and
// reference counted, so sharing it between threads is safe.
EVP_MAC* hmac_algorithm() {
    static EVP_MAC* mac = [] {
        EVP_MAC* m = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
        if (m == nullptr) throw std::runtime_error("OpenSSL: HMAC is not available");
        return m;
    }();
    return mac;
}

template <typename Parts>
std::string hmac_raw(std::string_view key, const Parts& parts) {
    mac_ctx_ptr ctx(EVP_MAC_CTX_new(hmac_algorithm()));
    if (!ctx) throw std::runtime_error("OpenSSL: EVP_MAC_CTX_new failed");

    char digest_name[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
        OSSL_PARAM_construct_end(),
    };
    // A non-null pointer even for an empty key: OpenSSL treats a null key as "keep the old one".
    static const unsigned char empty_key = 0;
    const auto* key_bytes =
        key.empty() ? &empty_key : reinterpret_cast<const unsigned char*>(key.data());
    if (EVP_MAC_init(ctx.get(), key_bytes, key.size(), params) != 1)
        throw std::runtime_error("OpenSSL: EVP_MAC_init failed");
    for (std::string_view part : parts) {
        if (part.empty()) continue;
        if (EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()),
                           part.size()) != 1)
            throw std::runtime_error("OpenSSL: EVP_MAC_update failed");
    }
    std::string out(digest_size, '\0');
    std::size_t out_len = 0;
    if (EVP_MAC_final(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &out_len,
                      out.size()) != 1 ||
        out_len != digest_size)
        throw std::runtime_error("OpenSSL: EVP_MAC_final failed");
    return out;
}

std::string to_hex(std::string_view bytes) {
    constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * bytes.size());
    for (char ch : bytes) {
        const auto c = static_cast<unsigned char>(ch);
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 0x0f]);
    }
    return out;
}

}  // namespace

hmac_signer::hmac_signer(std::string key) : key_(std::move(key)) {}

std::string hmac_signer::sign(const std::array<std::string_view, 4>& parts) const {
    if (!enabled()) return {};
    return to_hex(hmac_raw(key_, parts));
}

bool hmac_signer::verify(const std::array<std::string_view, 4>& parts,
                         std::string_view signature) const {
    if (!enabled()) return true;
    // The length check comes first so CRYPTO_memcmp never reads past either buffer. The
    // comparison is exact: jupyter_client signs in lowercase hex and compares the hex text too.
    if (signature.size() != hex_size) return false;
    const std::string expected = sign(parts);
    return CRYPTO_memcmp(expected.data(), signature.data(), hex_size) == 0;
}

std::string hmac_signer::hmac_sha256(std::string_view key, std::string_view data) {
    const std::array<std::string_view, 1> parts{data};
    return hmac_raw(key, parts);
}

}  // namespace callisto::kernelproto
