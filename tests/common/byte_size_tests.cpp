#include "common/byte_size.hpp"

#include <doctest/doctest.h>

using callisto::describe_bytes;
using callisto::format_size;
using callisto::parse_size;

TEST_CASE("parse_size takes bytes and binary units, and nothing else") {
    CHECK(parse_size("1000") == 1000u);
    CHECK(parse_size("1000B") == 1000u);
    CHECK(parse_size("0") == 0u);
    CHECK(parse_size("512KiB") == 512u << 10);
    CHECK(parse_size("32MiB") == 32u << 20);
    CHECK(parse_size("2GiB") == std::uint64_t{2} << 30);
    CHECK(parse_size("1TiB") == std::uint64_t{1} << 40);
    CHECK(parse_size("1024TiB") == callisto::max_size_bytes);
    for (const char* bad : {"", "GiB", "2GB", "2gib", "2 GiB", " 2GiB", "2GiB ", "-1MiB", "+1",
                            "1.5GiB", "0x10", "1025TiB", "99999999999999999999", "1KiBB"})
        CHECK_MESSAGE(!parse_size(bad), bad);
}

TEST_CASE("format_size writes whole units as parse_size takes them back, else bytes") {
    CHECK(format_size(0) == "0");
    CHECK(format_size(1000) == "1000");
    CHECK(format_size(1024) == "1KiB");
    CHECK(format_size(1536) == "1536");
    CHECK(format_size(1u << 20) == "1MiB");
    CHECK(format_size(std::uint64_t{3} << 30) == "3GiB");
    CHECK(format_size(std::uint64_t{1} << 40) == "1TiB");
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1536}, std::uint64_t{5} << 20,
                            std::uint64_t{3} << 40, callisto::max_size_bytes})
        CHECK(parse_size(format_size(n)) == n);
}

TEST_CASE("describe_bytes gives the exact figure and, when there is one, the unit") {
    CHECK(describe_bytes(1u << 20) == "1048576 bytes (1MiB)");
    CHECK(describe_bytes(1000) == "1000 bytes");
    CHECK(describe_bytes(0) == "0 bytes");
}
