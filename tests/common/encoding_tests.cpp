#include "common/encoding.hpp"

#include <doctest/doctest.h>

using callisto::decode_base64;
using callisto::encode_base64;
using callisto::to_hex;

TEST_CASE("to_hex writes two lower-case digits a byte") {
    CHECK(to_hex("") == "");
    CHECK(to_hex(std::string("\x00\x0f\xa0\xff", 4)) == "000fa0ff");
}

TEST_CASE("base64 encodes with padding, as RFC 4648's test vectors say") {
    CHECK(encode_base64("") == "");
    CHECK(encode_base64("f") == "Zg==");
    CHECK(encode_base64("fo") == "Zm8=");
    CHECK(encode_base64("foo") == "Zm9v");
    CHECK(encode_base64("foobar") == "Zm9vYmFy");
}

TEST_CASE("base64 decodes what Jupyter sends, line breaks included, and refuses garbage") {
    CHECK(decode_base64("aGVsbG8=") == std::optional<std::string>("hello"));
    CHECK(decode_base64("aGVs\nbG8h") == std::optional<std::string>("hello!"));
    CHECK(decode_base64("") == std::optional<std::string>(""));
    CHECK_FALSE(decode_base64("aGVsbG8"));   // not a multiple of 4
    CHECK_FALSE(decode_base64("aG=sbG8="));  // data after padding
    CHECK_FALSE(decode_base64("a$=="));
    CHECK_FALSE(decode_base64("Zg==="));  // three pads
    const std::string bytes("\x00\x01\xfe\xff binary", 10);
    CHECK(decode_base64(encode_base64(bytes)) == bytes);
}
