#include "gateway/egress/address_classifier.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace callisto::gateway::egress;

namespace {

std::string v4_text(std::string_view spelling) {
    auto a = parse_ipv4(spelling);
    return a ? a->to_string() : "invalid";
}

std::string v6_text(std::string_view spelling) {
    auto a = parse_ipv6(spelling);
    return a ? a->to_string() : "invalid";
}

address_class class_of(std::string_view spelling) {
    auto parsed = parse_host(spelling);
    REQUIRE(std::holds_alternative<host>(parsed));
    const auto* a = std::get_if<ip_address>(&std::get<host>(parsed));
    REQUIRE(a != nullptr);
    return classify(*a).kind;
}

std::string host_text(std::string_view spelling) {
    auto parsed = parse_host(spelling);
    if (auto* e = std::get_if<host_error>(&parsed)) return "error: " + std::string(to_string(*e));
    const auto& h = std::get<host>(parsed);
    if (auto* a = std::get_if<ip_address>(&h)) return "address " + a->to_string();
    return "name " + std::get<host_name>(h).name;
}

}  // namespace

TEST_CASE("parse_ipv4 reads every spelling inet_aton accepts for loopback") {
    CHECK(v4_text("127.0.0.1") == "127.0.0.1");
    CHECK(v4_text("127.1") == "127.0.0.1");
    CHECK(v4_text("127.0.1") == "127.0.0.1");
    CHECK(v4_text("2130706433") == "127.0.0.1");
    CHECK(v4_text("0x7f000001") == "127.0.0.1");
    CHECK(v4_text("0X7F000001") == "127.0.0.1");
    CHECK(v4_text("0x7f.1") == "127.0.0.1");
    CHECK(v4_text("0x7f.0x0.0x0.0x1") == "127.0.0.1");
    CHECK(v4_text("0177.0.0.1") == "127.0.0.1");
    CHECK(v4_text("0177.01") == "127.0.0.1");
    CHECK(v4_text("017700000001") == "127.0.0.1");
    CHECK(v4_text("127.0.0.1.") == "127.0.0.1");
    CHECK(v4_text("0") == "0.0.0.0");
    CHECK(v4_text("169.254.43518") == "169.254.169.254");
    CHECK(v4_text("0xa9fea9fe") == "169.254.169.254");
    CHECK(v4_text("2852039166") == "169.254.169.254");
    CHECK(v4_text("4294967295") == "255.255.255.255");
}

TEST_CASE("parse_ipv4 refuses parts out of range, bad digits and extra parts") {
    CHECK(v4_text("") == "invalid");
    CHECK(v4_text(".") == "invalid");
    CHECK(v4_text("4294967296") == "invalid");            // 2^32
    CHECK(v4_text("99999999999999999999") == "invalid");  // would wrap a 64-bit value
    CHECK(v4_text("256.0.0.1") == "invalid");
    CHECK(v4_text("1.256.0.1") == "invalid");
    CHECK(v4_text("1.2.3.256") == "invalid");
    CHECK(v4_text("1.2.65536") == "invalid");
    CHECK(v4_text("1.16777216") == "invalid");
    CHECK(v4_text("1.2.3.4.5") == "invalid");
    CHECK(v4_text("08") == "invalid");  // octal has no 8
    CHECK(v4_text("0x") == "invalid");
    CHECK(v4_text("0xg") == "invalid");
    CHECK(v4_text("1..2") == "invalid");
    CHECK(v4_text(".1.2.3") == "invalid");
    CHECK(v4_text("1.2.3.4..") == "invalid");  // one trailing dot only
    CHECK(v4_text("+1.2.3.4") == "invalid");
    CHECK(v4_text("-1") == "invalid");
    CHECK(v4_text("1.2.3.4 ") == "invalid");
    CHECK(v4_text(" 1.2.3.4") == "invalid");
    CHECK(v4_text("1e3") == "invalid");
}

TEST_CASE("parse_ipv6 reads RFC 4291 text, brackets and an IPv4 tail") {
    CHECK(v6_text("::1") == "::1");
    CHECK(v6_text("[::1]") == "::1");
    CHECK(v6_text("0:0:0:0:0:0:0:1") == "::1");
    CHECK(v6_text("0000:0000:0000:0000:0000:0000:0000:0001") == "::1");
    CHECK(v6_text("::") == "::");
    CHECK(v6_text("::ffff:127.0.0.1") == "::ffff:127.0.0.1");
    CHECK(v6_text("::FFFF:7F00:1") == "::ffff:127.0.0.1");
    CHECK(v6_text("0:0:0:0:0:ffff:127.0.0.1") == "::ffff:127.0.0.1");
    CHECK(v6_text("64:ff9b::10.0.0.1") == "64:ff9b::a00:1");
    CHECK(v6_text("2001:db8:0:0:1:0:0:1") == "2001:db8::1:0:0:1");  // RFC 5952: first longest
    CHECK(v6_text("2001:db8::") == "2001:db8::");
    CHECK(v6_text("fe80::1:2") == "fe80::1:2");
    CHECK(v6_text("1:2:3:4:5:6:7::") == "1:2:3:4:5:6:7:0");
    CHECK(v6_text("::2:3:4:5:6:7:8") == "0:2:3:4:5:6:7:8");
}

TEST_CASE("parse_ipv6 refuses malformed text, zone ids and odd IPv4 tails") {
    CHECK(v6_text("") == "invalid");
    CHECK(v6_text("[]") == "invalid");
    CHECK(v6_text(":::") == "invalid");
    CHECK(v6_text("1::2::3") == "invalid");
    CHECK(v6_text("1:2:3:4:5:6:7:8:9") == "invalid");
    CHECK(v6_text("1:2:3:4:5:6:7") == "invalid");
    CHECK(v6_text("1:2:3:4:5:6:7:8::") == "invalid");  // :: must stand for a group
    CHECK(v6_text("12345::") == "invalid");
    CHECK(v6_text("g::1") == "invalid");
    CHECK(v6_text(":1:2:3:4:5:6:7") == "invalid");
    CHECK(v6_text("1:2:3:4:5:6:7:") == "invalid");
    CHECK(v6_text("fe80::1%eth0") == "invalid");
    CHECK(v6_text("[fe80::1%25eth0]") == "invalid");
    CHECK(v6_text("::ffff:127.1") == "invalid");
    CHECK(v6_text("::ffff:0177.0.0.1") == "invalid");
    CHECK(v6_text("::ffff:127.0.0.256") == "invalid");
    CHECK(v6_text("::127.0.0.1:1") == "invalid");
    CHECK(v6_text("1.2.3.4::") == "invalid");
    CHECK(v6_text("[::1") == "invalid");
}

TEST_CASE("parse_host tells names from addresses as a URL parser does") {
    CHECK(host_text("PyPI.org") == "name pypi.org");
    CHECK(host_text("pypi.org.") == "name pypi.org");
    CHECK(host_text("localhost") == "name localhost");
    CHECK(host_text("files_x.example-1.org") == "name files_x.example-1.org");
    CHECK(host_text("1.2.3.example") == "name 1.2.3.example");
    CHECK(host_text("0x7f.example") == "name 0x7f.example");
    CHECK(host_text("127.1") == "address 127.0.0.1");
    CHECK(host_text("127.0.0.1.") == "address 127.0.0.1");
    CHECK(host_text("2130706433") == "address 127.0.0.1");
    CHECK(host_text("0x7f.1") == "address 127.0.0.1");
    CHECK(host_text("0X7F.0X1") == "address 127.0.0.1");
    CHECK(host_text("[::1]") == "address ::1");
    CHECK(host_text("[::ffff:127.0.0.1]") == "address ::ffff:127.0.0.1");
}

TEST_CASE("parse_host refuses bad names and numeric names that are no address") {
    CHECK(host_text("") == "error: empty host");
    CHECK(host_text(".") == "error: empty label in host name");
    CHECK(host_text("..") == "error: empty label in host name");
    CHECK(host_text("a..b") == "error: empty label in host name");
    CHECK(host_text(".a") == "error: empty label in host name");
    CHECK(host_text("a b") == "error: bad character in host name");
    CHECK(host_text("a/b") == "error: bad character in host name");
    CHECK(host_text("a%2eb") == "error: bad character in host name");
    CHECK(host_text("a@b") == "error: bad character in host name");
    CHECK(host_text("ex\xc3\xa4mple.org") == "error: bad character in host name");
    CHECK(host_text(std::string(64, 'a') + ".org") == "error: host name too long");
    std::string long_name;
    for (int i = 0; i < 64; ++i) long_name += "abc.";
    CHECK(host_text(long_name + "org") == "error: host name too long");
    CHECK(host_text("1.2.3.999") == "error: malformed address");
    CHECK(host_text("example.08") == "error: malformed address");
    CHECK(host_text("1.2.3.4.5") == "error: malformed address");
    CHECK(host_text("0x7f.0xg") == "name 0x7f.0xg");        // its last label is no number
    CHECK(host_text("::1") == "error: malformed address");  // unbracketed
    CHECK(host_text("[::1") == "error: malformed address");
    CHECK(host_text("[127.0.0.1]") == "error: malformed address");
    CHECK(host_text("[fe80::1%25eth0]") == "error: malformed address");
    CHECK(host_text("example.org:80") == "error: malformed address");
}

TEST_CASE("classify finds every IPv4 range a kernel must not reach") {
    CHECK(class_of("0.0.0.0") == address_class::unspecified);
    CHECK(class_of("0.1.2.3") == address_class::this_network);
    CHECK(class_of("127.0.0.1") == address_class::loopback);
    CHECK(class_of("127.255.255.254") == address_class::loopback);
    CHECK(class_of("10.0.0.1") == address_class::private_network);
    CHECK(class_of("172.16.0.1") == address_class::private_network);
    CHECK(class_of("172.31.255.255") == address_class::private_network);
    CHECK(class_of("192.168.1.1") == address_class::private_network);
    CHECK(class_of("100.64.0.1") == address_class::shared);
    CHECK(class_of("100.127.255.255") == address_class::shared);
    CHECK(class_of("169.254.169.254") == address_class::cloud_metadata);
    CHECK(class_of("169.254.0.1") == address_class::link_local);
    CHECK(class_of("192.0.0.170") == address_class::protocol_assignments);
    CHECK(class_of("192.0.2.1") == address_class::documentation);
    CHECK(class_of("198.51.100.1") == address_class::documentation);
    CHECK(class_of("203.0.113.1") == address_class::documentation);
    CHECK(class_of("198.18.0.1") == address_class::benchmarking);
    CHECK(class_of("198.19.255.255") == address_class::benchmarking);
    CHECK(class_of("192.88.99.1") == address_class::relay_anycast);
    CHECK(class_of("224.0.0.1") == address_class::multicast);
    CHECK(class_of("239.255.255.250") == address_class::multicast);
    CHECK(class_of("240.0.0.1") == address_class::reserved);
    CHECK(class_of("255.255.255.255") == address_class::broadcast);
}

TEST_CASE("classify leaves the addresses beside each range global") {
    for (const char* a : {"1.1.1.1", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
                          "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0",
                          "172.15.255.255", "172.32.0.0", "192.0.1.0", "192.167.255.255",
                          "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255"}) {
        CAPTURE(a);
        CHECK(class_of(a) == address_class::global);
    }
}

TEST_CASE("classify finds every odd spelling of loopback and metadata") {
    for (const char* a : {"127.1", "2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "127.0.0.1.",
                          "0x7F.0.0.1"}) {
        CAPTURE(a);
        CHECK(class_of(a) == address_class::loopback);
    }
    for (const char* a :
         {"169.254.43518", "2852039166", "0xa9.0xfe.0xa9.0xfe", "0251.0376.0251.0376"}) {
        CAPTURE(a);
        CHECK(class_of(a) == address_class::cloud_metadata);
    }
}

TEST_CASE("classify finds the IPv6 ranges a kernel must not reach") {
    CHECK(class_of("[::]") == address_class::unspecified);
    CHECK(class_of("[::1]") == address_class::loopback);
    CHECK(class_of("[fe80::1]") == address_class::link_local);
    CHECK(class_of("[febf::1]") == address_class::link_local);
    CHECK(class_of("[fec0::1]") == address_class::site_local);
    CHECK(class_of("[fc00::1]") == address_class::unique_local);
    CHECK(class_of("[fdff::1]") == address_class::unique_local);
    CHECK(class_of("[fd00:ec2::254]") == address_class::cloud_metadata);
    CHECK(class_of("[ff02::1]") == address_class::multicast);
    CHECK(class_of("[2001:db8::1]") == address_class::documentation);
    CHECK(class_of("[3fff::1]") == address_class::documentation);
    CHECK(class_of("[2001:2::1]") == address_class::benchmarking);
    CHECK(class_of("[2001::1]") == address_class::reserved);     // Teredo
    CHECK(class_of("[2001:10::1]") == address_class::reserved);  // ORCHID
    CHECK(class_of("[100::1]") == address_class::reserved);
    CHECK(class_of("[::127.0.0.1]") == address_class::ipv4_compatible);
    CHECK(class_of("[::8.8.8.8]") == address_class::ipv4_compatible);
    CHECK(class_of("[64:ff9b:1::1]") == address_class::local_nat64);
    CHECK(class_of("[2606:4700::1111]") == address_class::global);
    CHECK(class_of("[2a00:1450::1]") == address_class::global);
    CHECK(class_of("[2001:200::1]") == address_class::global);  // past 2001::/23
}

TEST_CASE("classify judges an IPv6 address by the IPv4 address it carries") {
    struct row {
        const char* spelling;
        address_class kind;
        const char* embedded;
        const char* how;
    };
    for (const auto& r : {
             row{"[::ffff:127.0.0.1]", address_class::loopback, "127.0.0.1", "IPv4-mapped"},
             row{"[::ffff:7f00:1]", address_class::loopback, "127.0.0.1", "IPv4-mapped"},
             row{"[::ffff:169.254.169.254]", address_class::cloud_metadata, "169.254.169.254",
                 "IPv4-mapped"},
             row{"[::ffff:10.1.2.3]", address_class::private_network, "10.1.2.3", "IPv4-mapped"},
             row{"[::ffff:8.8.8.8]", address_class::global, "8.8.8.8", "IPv4-mapped"},
             row{"[::ffff:0:127.0.0.1]", address_class::loopback, "127.0.0.1", "SIIT"},
             row{"[64:ff9b::127.0.0.1]", address_class::loopback, "127.0.0.1", "NAT64"},
             row{"[64:ff9b::a9fe:a9fe]", address_class::cloud_metadata, "169.254.169.254", "NAT64"},
             row{"[64:ff9b::8.8.8.8]", address_class::global, "8.8.8.8", "NAT64"},
             row{"[2002:7f00:1::]", address_class::loopback, "127.0.0.1", "6to4"},
             row{"[2002:c0a8:101::1]", address_class::private_network, "192.168.1.1", "6to4"},
             row{"[2002:808:808::1]", address_class::global, "8.8.8.8", "6to4"},
         }) {
        CAPTURE(r.spelling);
        auto parsed = parse_host(r.spelling);
        const auto& a = std::get<ip_address>(std::get<host>(parsed));
        const auto c = classify(a);
        CHECK(c.kind == r.kind);
        CHECK(c.decided_by.to_string() == r.embedded);
        CHECK(c.embedding == r.how);
    }
}

TEST_CASE("every address class has a name") {
    for (int i = 0; i <= static_cast<int>(address_class::local_nat64); ++i)
        CHECK(to_string(static_cast<address_class>(i)) != "unknown");
}
