#pragma once
// Bytes as text: hex digits and base64, one implementation each for the whole tree (HMAC
// signatures, audit hashes, token digests, images in JSON, uploads in MCP calls).

#include <optional>
#include <string>
#include <string_view>

namespace callisto {

// Lower-case hex, two digits a byte: "\x0f\xa0" -> "0fa0".
std::string to_hex(std::string_view bytes);

// Standard base64 (RFC 4648, "+/", padded).
std::string encode_base64(std::string_view bytes);

// Standard base64, padded to a multiple of four; line breaks and spaces between the symbols
// are skipped (Jupyter wraps some images' base64 in lines). nullopt for anything else.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace callisto
