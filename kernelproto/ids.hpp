#pragma once
// Random identifiers from OpenSSL's CSPRNG.

#include <cstddef>
#include <string>

namespace callisto::kernelproto {

// "4f5e...-...." canonical UUID version 4 text (36 chars).
std::string new_uuid();

// n random bytes as 2n lowercase hex characters (tokens, HMAC keys).
std::string random_hex(std::size_t n_bytes);

}  // namespace callisto::kernelproto
