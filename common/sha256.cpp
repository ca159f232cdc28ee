#include "common/sha256.hpp"

#include <openssl/evp.h>

#include "common/encoding.hpp"

namespace callisto {

std::string sha256(std::string_view bytes) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(bytes.data(), bytes.size(), out, &len, EVP_sha256(), nullptr);
    return std::string(reinterpret_cast<const char*>(out), len);
}

std::string sha256_hex(std::string_view bytes) { return to_hex(sha256(bytes)); }

}  // namespace callisto
