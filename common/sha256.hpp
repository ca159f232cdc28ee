#pragma once
// SHA-256 digests: of tokens (users files hold only digests), of code the audit log records by
// hash, of lines in the audit chain.

#include <string>
#include <string_view>

namespace callisto {

// The 32 raw bytes.
std::string sha256(std::string_view bytes);

// The 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace callisto
