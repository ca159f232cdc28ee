#include "gateway/egress/egress_allowlist.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace callisto::gateway::egress;

namespace {

std::string rule_text(std::string_view text) {
    auto r = parse_rule(text);
    if (auto* e = std::get_if<std::string>(&r)) return "error: " + *e;
    return std::get<allow_rule>(r).text;
}

allowlist list_of(std::vector<std::string> rules) {
    auto parsed = allowlist::parse(rules);
    REQUIRE(std::holds_alternative<allowlist>(parsed));
    return std::get<allowlist>(std::move(parsed));
}

ip_address address(std::string_view text) {
    auto parsed = parse_host(text);
    return std::get<ip_address>(std::get<host>(parsed));
}

}  // namespace

TEST_CASE("split_authority splits HOST[:PORT] and refuses bad ports") {
    auto ok = [](std::string_view text, std::string_view host, std::optional<int> port) {
        CAPTURE(text);
        auto a = split_authority(text);
        REQUIRE(std::holds_alternative<authority>(a));
        CHECK(std::get<authority>(a).host == host);
        const auto p = std::get<authority>(a).port;
        CHECK(p.has_value() == port.has_value());
        if (p && port) CHECK(*p == *port);
    };
    ok("example.org", "example.org", std::nullopt);
    ok("example.org:443", "example.org", 443);
    ok("[::1]:8080", "[::1]", 8080);
    ok("[::1]", "[::1]", std::nullopt);
    ok("127.0.0.1:1", "127.0.0.1", 1);
    ok("a:65535", "a", 65535);
    for (const char* bad :
         {"", ":80", "example.org:", "example.org:0", "example.org:65536", "example.org:080",
          "example.org:+80", "example.org:8o", "example.org: 80", "example.org:80:90", "::1",
          "::1:80", "[::1", "[::1]80", "[::1]:", "[::1]:x", "example.org:99999999999"}) {
        CAPTURE(bad);
        CHECK(std::holds_alternative<std::string>(split_authority(bad)));
    }
}

TEST_CASE("parse_rule writes each kind of rule in canonical form") {
    CHECK(rule_text("pypi.org") == "pypi.org");
    CHECK(rule_text("PyPI.org.") == "pypi.org");
    CHECK(rule_text("pypi.org:8080") == "pypi.org:8080");
    CHECK(rule_text("*.example.org") == "*.example.org");
    CHECK(rule_text("*.Example.ORG:443") == "*.example.org:443");
    CHECK(rule_text("127.0.0.1:8080") == "127.0.0.1:8080");
    CHECK(rule_text("[::1]:8080") == "[::1]:8080");
    CHECK(rule_text("169.254.169.254") == "169.254.169.254");
    CHECK(rule_text("localhost") == "localhost");
}

TEST_CASE("parse_rule refuses bad forms of every kind of rule") {
    for (const char* bad : {
             "",                     // nothing
             " pypi.org",            // spaces are not trimmed here
             "pypi.org ",            //
             "pypi org",             //
             "pypi.org:",            // empty port
             "pypi.org:0",           // port out of range
             "pypi.org:65536",       //
             "pypi.org:http",        //
             "http://pypi.org",      // a URL is not a rule
             "pypi.org/simple",      //
             "a..b",                 // empty label
             ".pypi.org",            //
             "*",                    // a wildcard over everything
             "*.",                   //
             "*.org",                // over a top-level domain
             "*.*.example.org",      // `*` once, as the first label
             "**.example.org",       //
             "*example.org",         //
             "a.*.example.org",      //
             "example.*",            //
             "*.127.0.0.1",          // a wildcard over addresses
             "*.[::1]",              //
             "127.1",                // an address must be canonical
             "127.1:8080",           //
             "2130706433",           //
             "0x7f.0.0.1",           //
             "0177.0.0.1",           //
             "127.0.0.1.",           //
             "[::FFFF:127.0.0.1]",   //
             "[0::1]:8080",          //
             "::1",                  // IPv6 needs brackets
             "[::1",                 //
             "[fe80::1%25eth0]:80",  // no zone ids
             "1.2.3.999",            // numeric but no address
             "[127.0.0.1]",          //
         }) {
        CAPTURE(bad);
        CHECK(rule_text(bad).starts_with("error: "));
    }
}

TEST_CASE("allowlist parse names the first bad rule") {
    auto parsed = allowlist::parse({"pypi.org", "*.org"});
    REQUIRE(std::holds_alternative<std::string>(parsed));
    CHECK(std::get<std::string>(parsed).starts_with("rule 2 (`*.org`): "));
}

TEST_CASE("an empty allowlist refuses everything") {
    allowlist none;
    for (const char* h : {"pypi.org", "8.8.8.8", "127.0.0.1", "[::1]"}) {
        CAPTURE(h);
        CHECK_FALSE(none.decide(h, 443).allowed);
    }
    CHECK(none.decide("pypi.org", 443).rule == rule_not_listed);
}

TEST_CASE("a name rule allows that name on 80 and 443 only") {
    auto list = list_of({"pypi.org"});
    auto d = list.decide("pypi.org", 443);
    CHECK(d.allowed);
    CHECK(d.rule == "pypi.org");
    CHECK(list.decide("PYPI.ORG.", 80).allowed);
    auto other_port = list.decide("pypi.org", 22);
    CHECK_FALSE(other_port.allowed);
    CHECK(other_port.rule == "pypi.org");
    CHECK(other_port.reason == "port 22 is not allowed for pypi.org (the rule allows 80 and 443)");
    CHECK_FALSE(list.decide("files.pypi.org", 443).allowed);
    CHECK_FALSE(list.decide("pypi.org.evil.example", 443).allowed);
    CHECK_FALSE(list.decide("evilpypi.org", 443).allowed);
}

TEST_CASE("a rule with a port allows that port only") {
    auto list = list_of({"pypi.org:8443"});
    CHECK(list.decide("pypi.org", 8443).allowed);
    CHECK_FALSE(list.decide("pypi.org", 443).allowed);
    CHECK_FALSE(list.decide("pypi.org", 80).allowed);
}

TEST_CASE("a second rule for the same name opens another port") {
    auto list = list_of({"pypi.org:8443", "pypi.org:9000"});
    CHECK(list.decide("pypi.org", 9000).rule == "pypi.org:9000");
    CHECK(list.decide("pypi.org", 8443).rule == "pypi.org:8443");
}

TEST_CASE("a wildcard covers the names below its domain, not the domain itself") {
    auto list = list_of({"*.example.org"});
    CHECK(list.decide("a.example.org", 443).allowed);
    CHECK(list.decide("a.b.example.org", 443).rule == "*.example.org");
    CHECK_FALSE(list.decide("example.org", 443).allowed);
    CHECK_FALSE(list.decide("badexample.org", 443).allowed);
    CHECK_FALSE(list.decide("a.example.org.evil.test", 443).allowed);
    CHECK_FALSE(list.decide("a.example.org", 8080).allowed);
}

TEST_CASE("the exact name wins over a wildcard, and the longest wildcard over a shorter") {
    auto list = list_of({"*.example.org", "*.files.example.org:8080", "api.example.org:9000"});
    CHECK(list.decide("api.example.org", 9000).rule == "api.example.org:9000");
    CHECK(list.decide("api.example.org", 443).rule == "*.example.org");
    CHECK(list.decide("x.files.example.org", 8080).rule == "*.files.example.org:8080");
    CHECK(list.decide("x.files.example.org", 443).rule == "*.example.org");
}

TEST_CASE("an address literal needs an exact-address rule, even a global one") {
    auto list = list_of({"pypi.org", "*.example.org"});
    auto d = list.decide("8.8.8.8", 443);
    CHECK_FALSE(d.allowed);
    CHECK(d.rule == rule_not_listed);
    auto listed = list_of({"8.8.8.8"});
    CHECK(listed.decide("8.8.8.8", 443).allowed);
    CHECK(listed.decide("8.8.8.8", 443).rule == "8.8.8.8");
}

TEST_CASE("a forbidden address is refused with its class unless an exact rule lists it") {
    allowlist none;
    auto d = none.decide("127.0.0.1", 8080);
    CHECK_FALSE(d.allowed);
    CHECK(d.rule == "forbidden address: loopback");
    CHECK(none.decide("169.254.169.254", 80).rule == "forbidden address: cloud metadata");
    CHECK(none.decide("10.0.0.1", 80).rule == "forbidden address: private");
    CHECK(none.decide("[::1]", 80).rule == "forbidden address: loopback");
    CHECK(none.decide("[::ffff:127.0.0.1]", 80).rule == "forbidden address: loopback");
    CHECK(none.decide("[fd00:ec2::254]", 80).rule == "forbidden address: cloud metadata");

    auto list = list_of({"127.0.0.1:8080", "[::1]:8080"});
    CHECK(list.decide("127.0.0.1", 8080).allowed);
    CHECK(list.decide("127.0.0.1", 8080).rule == "127.0.0.1:8080");
    CHECK(list.decide("[::1]", 8080).allowed);
    auto other_port = list.decide("127.0.0.1", 8081);
    CHECK_FALSE(other_port.allowed);
    CHECK(other_port.rule == "127.0.0.1:8080");
    CHECK_FALSE(list.decide("127.0.0.2", 8080).allowed);
}

TEST_CASE("other spellings of an allowed address are refused") {
    auto list = list_of({"127.0.0.1:8080"});
    for (const char* odd :
         {"127.1", "2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "127.0.0.1.", "127.0.1"}) {
        CAPTURE(odd);
        auto d = list.decide(odd, 8080);
        CHECK_FALSE(d.allowed);
        CHECK(d.rule == rule_odd_spelling);
        CHECK(d.reason == std::string(odd) + " is 127.0.0.1 written another way");
    }
    // The mapped form is another address: the IPv4 rule does not list it.
    auto mapped = list.decide("[::ffff:127.0.0.1]", 8080);
    CHECK_FALSE(mapped.allowed);
    CHECK(mapped.rule == "forbidden address: loopback");
    CHECK(list.decide("[::FFFF:127.0.0.1]", 8080).rule == rule_odd_spelling);
    CHECK(list.decide("[0::1]", 8080).rule == rule_odd_spelling);
}

TEST_CASE("a malformed host is refused by name") {
    auto list = list_of({"pypi.org"});
    for (const char* bad : {"", "a..b", "pypi org", "1.2.3.999", "::1", "[::1", "pypi.org:443"}) {
        CAPTURE(bad);
        auto d = list.decide(bad, 443);
        CHECK_FALSE(d.allowed);
        CHECK(d.rule == rule_malformed_host);
    }
}

TEST_CASE("check_resolved refuses a name that resolves to a forbidden address") {
    auto list = list_of({"rebind.example.org"});
    REQUIRE(list.decide("rebind.example.org", 443).allowed);
    auto d = list.check_resolved(address("127.0.0.1"), 443);
    CHECK_FALSE(d.allowed);
    CHECK(d.rule == "forbidden address: loopback");
    CHECK(d.reason ==
          "the name resolves to 127.0.0.1, a loopback address; only an exact-address rule for it "
          "allows it");
    auto metadata = list.check_resolved(address("[::ffff:169.254.169.254]"), 80);
    CHECK_FALSE(metadata.allowed);
    CHECK(metadata.rule == "forbidden address: cloud metadata");
    CHECK(metadata.reason.find("IPv4-mapped 169.254.169.254") != std::string::npos);
    CHECK_FALSE(list.check_resolved(address("[64:ff9b::10.0.0.1]"), 443).allowed);
    CHECK_FALSE(list.check_resolved(address("[fe80::1]"), 443).allowed);
    CHECK(list.check_resolved(address("8.8.8.8"), 443).allowed);
}

TEST_CASE("check_resolved lets an exact-address rule open a forbidden address on its port") {
    auto list = list_of({"localhost:8080", "127.0.0.1:8080"});
    CHECK(list.decide("localhost", 8080).allowed);
    CHECK(list.check_resolved(address("127.0.0.1"), 8080).allowed);
    CHECK(list.check_resolved(address("127.0.0.1"), 8080).rule == "127.0.0.1:8080");
    CHECK_FALSE(list.check_resolved(address("[::1]"), 8080).allowed);
    CHECK_FALSE(list.check_resolved(address("127.0.0.1"), 8081).allowed);
}

TEST_CASE("the gateway's own endpoints are refused whatever the rules say") {
    auto list = list_of({"127.0.0.1:8888", "localhost:8888"});
    list.forbid_endpoint(address("127.0.0.1"), 8888, "the gateway's own listener");
    auto literal = list.decide("127.0.0.1", 8888);
    CHECK_FALSE(literal.allowed);
    CHECK(literal.rule == rule_own_endpoint);
    CHECK(literal.reason == "127.0.0.1:8888 is the gateway's own listener");
    auto resolved = list.check_resolved(address("127.0.0.1"), 8888);
    CHECK_FALSE(resolved.allowed);
    CHECK(resolved.rule == rule_own_endpoint);
    CHECK(list.decide("127.0.0.1", 8889).rule == "127.0.0.1:8888");  // another port: as before
}

TEST_CASE("a gateway listening on 0.0.0.0 or :: forbids its port on every address") {
    auto list = list_of({"127.0.0.1:8888", "10.1.2.3:8888", "[::1]:8888"});
    list.forbid_endpoint(address("0.0.0.0"), 8888, "the gateway's own listener");
    for (const char* a : {"127.0.0.1", "10.1.2.3", "[::1]"}) {
        CAPTURE(a);
        CHECK(list.decide(a, 8888).rule == rule_own_endpoint);
        CHECK(list.check_resolved(address(a), 8888).rule == rule_own_endpoint);
    }
    CHECK(list.decide("127.0.0.1", 8889).rule == "127.0.0.1:8888");
}

namespace {
allow_rule rule(std::string_view text) {
    auto parsed = parse_rule(text);
    REQUIRE(std::holds_alternative<allow_rule>(parsed));
    return std::get<allow_rule>(std::move(parsed));
}
}  // namespace

TEST_CASE("covers: a name covers itself on its ports, never another name") {
    CHECK(covers(rule("pypi.org"), rule("pypi.org")));
    CHECK(covers(rule("pypi.org"), rule("PyPI.org.")));
    CHECK(covers(rule("pypi.org"), rule("pypi.org:443")));
    CHECK(covers(rule("pypi.org"), rule("pypi.org:80")));
    CHECK_FALSE(covers(rule("pypi.org"), rule("pypi.org:8080")));
    CHECK_FALSE(covers(rule("pypi.org:443"), rule("pypi.org")));  // 80 too
    CHECK(covers(rule("pypi.org:8080"), rule("pypi.org:8080")));
    CHECK_FALSE(covers(rule("pypi.org"), rule("files.pypi.org")));
    CHECK_FALSE(covers(rule("pypi.org"), rule("*.pypi.org")));
}

TEST_CASE("covers: a wildcard covers the names and wildcards below its domain, not the domain") {
    CHECK(covers(rule("*.example.org"), rule("a.example.org")));
    CHECK(covers(rule("*.example.org"), rule("b.a.example.org:443")));
    CHECK(covers(rule("*.example.org"), rule("*.example.org")));
    CHECK(covers(rule("*.example.org"), rule("*.a.example.org")));
    CHECK_FALSE(covers(rule("*.example.org"), rule("example.org")));
    CHECK_FALSE(covers(rule("*.example.org"), rule("badexample.org")));
    CHECK_FALSE(covers(rule("*.a.example.org"), rule("*.example.org")));
    CHECK_FALSE(covers(rule("*.example.org"), rule("a.example.org:8443")));
    CHECK_FALSE(covers(rule("*.example.org"), rule("127.0.0.1")));
}

TEST_CASE("covers: an address covers only itself, however a name resolves") {
    CHECK(covers(rule("127.0.0.1:8080"), rule("127.0.0.1:8080")));
    CHECK_FALSE(covers(rule("127.0.0.1:8080"), rule("127.0.0.1:8081")));
    CHECK_FALSE(covers(rule("127.0.0.1:8080"), rule("127.0.0.2:8080")));
    CHECK_FALSE(covers(rule("127.0.0.1:8080"), rule("localhost:8080")));
    CHECK_FALSE(covers(rule("[::1]:8080"), rule("127.0.0.1:8080")));
    CHECK(covers(rule("[::1]:8080"), rule("[::1]:8080")));
}

TEST_CASE("beyond names each asked rule no ceiling rule covers, in canonical form") {
    const auto ceiling = parse_rules({"pypi.org", "*.pythonhosted.org:443", "127.0.0.1:8080"});
    CHECK(beyond(parse_rules({"pypi.org:443", "files.pythonhosted.org:443", "127.0.0.1:8080"}),
                 ceiling)
              .empty());
    CHECK(beyond(parse_rules({"PyPI.org", "evil.org", "files.pythonhosted.org", "127.0.0.1:8081"}),
                 ceiling) ==
          std::vector<std::string>{"evil.org", "files.pythonhosted.org", "127.0.0.1:8081"});
    CHECK(beyond(parse_rules({"pypi.org"}), {}) == std::vector<std::string>{"pypi.org"});
}
