// Whether a TLS port's connection speaks TLS or plain HTTP, from its first bytes.

#include "gateway/http/tls_detect.hpp"

#include <string>
#include <vector>

#include <doctest/doctest.h>

using namespace callisto::gateway;

namespace {

// A TLS record: its type, version 3.1 and length, then the fragment.
std::string record(char type, const std::string& fragment) {
    return std::string{type, 0x03, 0x01, static_cast<char>(fragment.size() >> 8),
                       static_cast<char>(fragment.size() & 0xff)} +
           fragment;
}

// A ClientHello handshake message of `body` bytes: type 1, a 24-bit length, the body.
std::string client_hello(std::size_t body) {
    std::string m{0x01, static_cast<char>(body >> 16), static_cast<char>((body >> 8) & 0xff),
                  static_cast<char>(body & 0xff)};
    m += std::string{0x03, 0x03};  // legacy_version 1.2
    m.resize(4 + body, '\x5a');
    return m;
}

}  // namespace

TEST_CASE("tls detection: nothing received yet needs more") {
    CHECK(classify_first_bytes("") == first_bytes::need_more);
}

TEST_CASE("tls detection: a ClientHello in one record is TLS") {
    const auto hello = record(0x16, client_hello(508));
    CHECK(classify_first_bytes(hello) == first_bytes::tls);
    CHECK(classify_first_bytes(hello.substr(0, 1)) == first_bytes::tls);
}

TEST_CASE("tls detection: a ClientHello split over records whose first is short is TLS") {
    // RFC 8446 5.1 lets a client fragment a handshake message over records; Beast's
    // detect_ssl wanted a whole ClientHello of 34 bytes or more in the first record.
    const auto hello = client_hello(508);
    for (std::size_t first : {1, 4, 9, 33, 40}) {
        INFO("first record: " << first << " bytes");
        const auto split = record(0x16, hello.substr(0, first)) + record(0x16, hello.substr(first));
        CHECK(classify_first_bytes(split) == first_bytes::tls);
        CHECK(classify_first_bytes(split.substr(0, 5)) == first_bytes::tls);  // the header only
    }
}

TEST_CASE("tls detection: HTTP, and anything that starts no TLS handshake, is plain HTTP") {
    const std::vector<std::string> plain = {
        "GET /api HTTP/1.1\r\nHost: x\r\n\r\n", "G", "POST /v1/executions HTTP/1.1\r\n",
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "\r\n", std::string(1, '\0'),
        // An alert or application data record, and an SSLv2-style hello: not a ClientHello.
        record(0x15, "\x02\x28"), record(0x17, "data"), "\x80\x2e\x01\x03\x01"};
    for (const auto& text : plain) {
        INFO(text);
        CHECK(classify_first_bytes(text) == first_bytes::plain_http);
    }
}
