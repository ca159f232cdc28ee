#include "common/byte_size.hpp"

#include <doctest/doctest.h>

using callisto::describe_bytes;
using callisto::format_size;

TEST_CASE("format_size writes whole units as the size options take them, else bytes") {
    CHECK(format_size(0) == "0");
    CHECK(format_size(1000) == "1000");
    CHECK(format_size(1024) == "1KiB");
    CHECK(format_size(1536) == "1536");
    CHECK(format_size(1u << 20) == "1MiB");
    CHECK(format_size(std::uint64_t{3} << 30) == "3GiB");
    CHECK(format_size(std::uint64_t{1} << 40) == "1024GiB");
}

TEST_CASE("describe_bytes gives the exact figure and, when there is one, the unit") {
    CHECK(describe_bytes(1u << 20) == "1048576 bytes (1MiB)");
    CHECK(describe_bytes(1000) == "1000 bytes");
    CHECK(describe_bytes(0) == "0 bytes");
}
