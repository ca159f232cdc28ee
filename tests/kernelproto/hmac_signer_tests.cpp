#include <string>
#include <string_view>

#include <doctest/doctest.h>

#include "test_support.hpp"

#include "kernelproto/hmac_signer.hpp"

using callisto::kernelproto::hmac_signer;
using callisto::kernelproto::testing::from_hex;

TEST_CASE("hmac_sha256 matches the RFC 4231 test vectors") {
    struct vector {
        std::string key;
        std::string data;
        std::string expected;
        std::size_t truncate_to = 32;
    };
    const vector vectors[] = {
        // Test case 1
        {std::string(20, '\x0b'), "Hi There",
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        // Test case 2: key shorter than the block
        {"Jefe", "what do ya want for nothing?",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        // Test case 3
        {std::string(20, '\xaa'), std::string(50, '\xdd'),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        // Test case 4
        {from_hex("0102030405060708090a0b0c0d0e0f10111213141516171819"), std::string(50, '\xcd'),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        // Test case 5: output truncated to 128 bits
        {std::string(20, '\x0c'), "Test With Truncation", "a3b6167473100ee06e0c796c2955552b", 16},
        // Test case 6: key larger than the block
        {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        // Test case 7: key and data larger than the block
        {std::string(131, '\xaa'),
         "This is a test using a larger than block-size key and a larger than block-size data. "
         "The key needs to be hashed before being used by the HMAC algorithm.",
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
    };
    int n = 0;
    for (const auto& v : vectors) {
        CAPTURE(++n);
        const std::string mac = hmac_signer::hmac_sha256(v.key, v.data);
        REQUIRE(mac.size() == 32);
        CHECK(mac.substr(0, v.truncate_to) == from_hex(v.expected));
    }
}

TEST_CASE("sign hashes the four parts in order as one stream") {
    const hmac_signer signer("secret");
    const std::string sig = signer.sign({R"({"a":1})", "{}", "{}", R"({"b":2})"});
    CHECK(sig.size() == 64);
    CHECK(from_hex(sig) ==
          hmac_signer::hmac_sha256("secret", std::string(R"({"a":1})") + "{}{}" + R"({"b":2})"));
    CHECK(sig.find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("an empty key disables signing and accepts any signature") {
    const hmac_signer signer;
    CHECK_FALSE(signer.enabled());
    CHECK(signer.sign({"{}", "{}", "{}", "{}"}).empty());
    CHECK(signer.verify({"{}", "{}", "{}", "{}"}, ""));
    CHECK(signer.verify({"{}", "{}", "{}", "{}"}, "whatever"));
}

TEST_CASE("verify rejects wrong, truncated, overlong and uppercase signatures") {
    const hmac_signer signer("k");
    const std::array<std::string_view, 4> parts{"{}", "{}", "{}", "{}"};
    const std::string good = signer.sign(parts);
    CHECK(signer.verify(parts, good));
    CHECK_FALSE(signer.verify(parts, ""));
    CHECK_FALSE(signer.verify(parts, good.substr(0, 63)));
    CHECK_FALSE(signer.verify(parts, good + "0"));
    std::string flipped = good;
    flipped[10] = flipped[10] == '0' ? '1' : '0';
    CHECK_FALSE(signer.verify(parts, flipped));
    // jupyter_client compares the lowercase hex text exactly, so do we.
    std::string upper = good;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (upper != good) CHECK_FALSE(signer.verify(parts, upper));
    CHECK_FALSE(hmac_signer("other").verify(parts, good));
}
