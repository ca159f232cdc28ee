#include <set>
#include <string>

#include <doctest/doctest.h>

#include "test_support.hpp"

#include "kernelproto/channel.hpp"
#include "kernelproto/ids.hpp"
#include "kernelproto/wire_error.hpp"

namespace kp = callisto::kernelproto;

TEST_CASE("channel names round trip and unknown names are rejected") {
    for (auto ch : kp::all_channels) CHECK(kp::channel_from_string(kp::to_string(ch)) == ch);
    CHECK(kp::to_string(kp::channel::stdin_) == "stdin");
    CHECK_FALSE(kp::channel_from_string("hb"));
    CHECK_FALSE(kp::channel_from_string(""));
    CHECK_FALSE(kp::channel_from_string("Shell"));
    CHECK_FALSE(kp::channel_from_string("stdin_"));
}

TEST_CASE("new_uuid returns distinct canonical version 4 UUIDs") {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const std::string id = kp::new_uuid();
        REQUIRE(id.size() == 36);
        for (std::size_t pos : {8u, 13u, 18u, 23u}) CHECK(id[pos] == '-');
        CHECK(id[14] == '4');
        CHECK(std::string("89ab").find(id[19]) != std::string::npos);
        std::string digits = id;
        std::erase(digits, '-');
        CHECK(digits.find_first_not_of("0123456789abcdef") == std::string::npos);
        seen.insert(id);
    }
    CHECK(seen.size() == 200);
}

TEST_CASE("random_hex returns 2n lowercase hex characters") {
    CHECK(kp::random_hex(0).empty());
    const std::string a = kp::random_hex(32);
    CHECK(a.size() == 64);
    CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(a != kp::random_hex(32));
}

TEST_CASE("wire errors belong to the callisto.wire category with a message each") {
    using kp::wire_error;
    const std::error_code ec = wire_error::bad_signature;
    CHECK(ec.category().name() == std::string("callisto.wire"));
    CHECK(ec == wire_error::bad_signature);
    CHECK(ec != wire_error::bad_offsets);
    std::set<std::string> messages;
    for (int v = static_cast<int>(wire_error::no_delimiter);
         v <= static_cast<int>(wire_error::invalid_utf8); ++v) {
        const std::string m = kp::make_error_code(static_cast<wire_error>(v)).message();
        CHECK_FALSE(m.empty());
        messages.insert(m);
    }
    CHECK(messages.size() == 11);
}
