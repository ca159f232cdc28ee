#include "gateway/http/tls_detect.hpp"

namespace callisto::gateway {

namespace {
// TLS's ContentType handshake (RFC 8446, 5.1): every ClientHello record starts with it.
constexpr char handshake_record = 0x16;
}  // namespace

first_bytes classify_first_bytes(std::string_view received) {
    if (received.empty()) return first_bytes::need_more;
    return received.front() == handshake_record ? first_bytes::tls : first_bytes::plain_http;
}

}  // namespace callisto::gateway
