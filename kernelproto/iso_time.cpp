#include "kernelproto/iso_time.hpp"

#include <cstdio>

namespace callisto::kernelproto {

namespace {

using namespace std::chrono;

// Reads exactly n ASCII digits at pos; false on anything else.
bool read_digits(std::string_view text, std::size_t pos, std::size_t n, int& value) {
    if (pos + n > text.size()) return false;
    value = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        const char c = text[i];
        if (c < '0' || c > '9') return false;
        value = value * 10 + (c - '0');
    }
    return true;
}

}  // namespace

std::string format_iso_time(system_clock::time_point t) {
    const auto us = floor<microseconds>(t);
    const auto day = floor<days>(us);
    const year_month_day ymd{day};
    const hh_mm_ss hms{us - day};
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", int{ymd.year()},
                  unsigned{ymd.month()}, unsigned{ymd.day()}, static_cast<int>(hms.hours().count()),
                  static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                  static_cast<int>(hms.subseconds().count()));
    return buf;
}

std::optional<system_clock::time_point> parse_iso_time(std::string_view text) {
    // Fixed layout "YYYY-MM-DDTHH:MM:SS" then an optional fraction and a UTC suffix.
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    if (!read_digits(text, 0, 4, y) || text.size() < 19 || text[4] != '-' ||
        !read_digits(text, 5, 2, mo) || text[7] != '-' || !read_digits(text, 8, 2, d) ||
        text[10] != 'T' || !read_digits(text, 11, 2, h) || text[13] != ':' ||
        !read_digits(text, 14, 2, mi) || text[16] != ':' || !read_digits(text, 17, 2, s))
        return std::nullopt;
    const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                             day{static_cast<unsigned>(d)}};
    if (!ymd.ok() || h > 23 || mi > 59 || s > 59) return std::nullopt;

    std::size_t pos = 19;
    long long micros = 0;
    if (pos < text.size() && text[pos] == '.') {
        // Python writes 6 digits, JavaScript 3; accept 1..9 and keep microsecond precision.
        ++pos;
        std::size_t n = 0;
        long long scale = 100000;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
            if (++n > 9) return std::nullopt;
            micros += (text[pos] - '0') * scale;
            scale /= 10;
            ++pos;
        }
        if (n == 0) return std::nullopt;
    }
    const std::string_view suffix = text.substr(pos);
    if (suffix != "Z" && suffix != "+00:00") return std::nullopt;

    return system_clock::time_point{sys_days{ymd}.time_since_epoch() + hours{h} + minutes{mi} +
                                    seconds{s} + microseconds{micros}};
}

}  // namespace callisto::kernelproto
