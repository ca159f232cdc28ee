#pragma once
// On a TLS port, whether a connection's first bytes are TLS or plain HTTP (answered in plain
// text). Pure, so every form is unit-tested.
//
// Beast's detect_ssl also wants the first record to hold a whole ClientHello of 34 bytes or
// more; TLS lets a client split its ClientHello over several records (RFC 8446, 5.1), and
// such a client was answered in plain HTTP. A handshake record's type byte is enough to tell:
// no HTTP method starts with 0x16, and OpenSSL judges the rest.

#include <string_view>

namespace callisto::gateway {

enum class first_bytes { need_more, tls, plain_http };

first_bytes classify_first_bytes(std::string_view received);

}  // namespace callisto::gateway
