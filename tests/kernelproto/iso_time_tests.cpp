#include <chrono>
#include <string>

#include <doctest/doctest.h>

#include "test_support.hpp"

#include "kernelproto/iso_time.hpp"

using namespace std::chrono;
using callisto::kernelproto::format_iso_time;
using callisto::kernelproto::parse_iso_time;

namespace {

system_clock::time_point at(int y, unsigned mo, unsigned d, int h, int mi, int s, long us) {
    return system_clock::time_point{sys_days{year{y} / month{mo} / day{d}}.time_since_epoch() +
                                    hours{h} + minutes{mi} + seconds{s} + microseconds{us}};
}

}  // namespace

TEST_CASE("format_iso_time writes UTC with six fractional digits and Z") {
    CHECK(format_iso_time(at(2026, 11, 21, 10, 0, 0, 123)) == "2026-11-21T10:00:00.000123Z");
    CHECK(format_iso_time(at(1970, 1, 1, 0, 0, 0, 0)) == "1970-01-01T00:00:00.000000Z");
    CHECK(format_iso_time(at(2024, 2, 29, 23, 59, 59, 999999)) == "2024-02-29T23:59:59.999999Z");
}

TEST_CASE("format_iso_time truncates below a microsecond") {
    const auto t = at(2026, 1, 2, 3, 4, 5, 6) + nanoseconds{999};
    CHECK(format_iso_time(t) == "2026-01-02T03:04:05.000006Z");
}

TEST_CASE("parse_iso_time round trips what format_iso_time writes") {
    const auto now = floor<microseconds>(system_clock::now());
    const auto parsed = parse_iso_time(format_iso_time(now));
    REQUIRE(parsed);
    CHECK(*parsed == now);
}

TEST_CASE("parse_iso_time accepts +00:00, no fraction and short fractions") {
    const auto expected = at(2026, 11, 21, 10, 0, 0, 123);
    CHECK(parse_iso_time("2026-11-21T10:00:00.000123+00:00") == expected);
    CHECK(parse_iso_time("2026-11-21T10:00:00Z") == at(2026, 11, 21, 10, 0, 0, 0));
    CHECK(parse_iso_time("2026-11-21T10:00:00+00:00") == at(2026, 11, 21, 10, 0, 0, 0));
    CHECK(parse_iso_time("2026-11-21T10:00:00.5Z") == at(2026, 11, 21, 10, 0, 0, 500000));
    CHECK(parse_iso_time("2026-11-21T10:00:00.123Z") == at(2026, 11, 21, 10, 0, 0, 123000));
}

TEST_CASE("parse_iso_time rejects garbage") {
    const char* bad[] = {
        "",
        "garbage",
        "2026-11-21",
        "2026-11-21T10:00:00",              // no zone
        "2026-11-21T10:00:00.Z",            // empty fraction
        "2026-11-21T10:00:00.1234567890Z",  // more than nine digits
        "2026-11-21 10:00:00Z",
        "2026-13-01T10:00:00Z",
        "2026-02-30T10:00:00Z",
        "2026-11-21T24:00:00Z",
        "2026-11-21T10:60:00Z",
        "2026-11-21T10:00:60Z",
        "2026-11-21T10:00:00+01:00",
        "2026-11-21T10:00:00ZZ",
        "2026-11-21T10:00:00.000123Zjunk",
        "20x6-11-21T10:00:00Z",
        "+2026-11-21T10:00:00Z",
    };
    for (const char* text : bad) {
        CAPTURE(text);
        CHECK_FALSE(parse_iso_time(text));
    }
}
