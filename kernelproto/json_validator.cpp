#include "kernelproto/json_validator.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

namespace callisto::kernelproto {
namespace {

// Whether any of eight bytes ends a plain string run: a quote, a backslash, a control character
// (< 0x20) or the start of a multi-byte UTF-8 sequence (>= 0x80). Word-at-a-time bit tricks
// (exact as a yes/no answer; no SIMD intrinsics, so it is the same code on every host): the
// scan of a 50 MB output goes from ~1 to several GB/s, which is what the relay waits for.
bool ends_plain_run(std::uint64_t w) {
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t highs = 0x8080808080808080ull;
    const auto has_zero_byte = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
    const std::uint64_t below_space = (w - ones * 0x20) & ~w & highs;
    return ((below_space | has_zero_byte(w ^ (ones * '"')) | has_zero_byte(w ^ (ones * '\\')) |
             (w & highs)) != 0);
}

class validator {
public:
    validator(std::string_view text, std::size_t max_depth)
        : p_(reinterpret_cast<const unsigned char*>(text.data())),
          end_(p_ + text.size()),
          max_depth_(max_depth) {}

    json_check run() {
        skip_space();
        if (!value()) return too_deep_ ? json_check::too_deep : json_check::malformed;
        skip_space();
        return p_ == end_ ? json_check::valid : json_check::malformed;
    }

private:
    void skip_space() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    }

    bool literal(std::string_view word) {
        if (static_cast<std::size_t>(end_ - p_) < word.size()) return false;
        for (char c : word)
            if (*p_++ != static_cast<unsigned char>(c)) return false;
        return true;
    }

    static bool digit(unsigned char c) { return c >= '0' && c <= '9'; }
    static bool hex(unsigned char c) {
        return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }

    bool number() {
        if (p_ < end_ && *p_ == '-') ++p_;
        if (p_ == end_) return false;
        if (*p_ == '0') {
            ++p_;
        } else if (digit(*p_)) {
            while (p_ < end_ && digit(*p_)) ++p_;
        } else {
            return false;
        }
        if (p_ < end_ && *p_ == '.') {
            ++p_;
            if (p_ == end_ || !digit(*p_)) return false;
            while (p_ < end_ && digit(*p_)) ++p_;
        }
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (p_ == end_ || !digit(*p_)) return false;
            while (p_ < end_ && digit(*p_)) ++p_;
        }
        return true;
    }

    // One UTF-8 sequence starting at a byte >= 0x80 (RFC 3629: no overlongs, no surrogates,
    // nothing above U+10FFFF).
    bool utf8_sequence() {
        const unsigned char c = *p_;
        int extra;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            extra = 1;
        else if (c == 0xE0)
            extra = 2, lo = 0xA0;
        else if (c == 0xED)
            extra = 2, hi = 0x9F;
        else if (c >= 0xE1 && c <= 0xEF)
            extra = 2;
        else if (c == 0xF0)
            extra = 3, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3)
            extra = 3;
        else if (c == 0xF4)
            extra = 3, hi = 0x8F;
        else
            return false;
        if (end_ - p_ <= extra) return false;
        if (p_[1] < lo || p_[1] > hi) return false;
        for (int i = 2; i <= extra; ++i)
            if (p_[i] < 0x80 || p_[i] > 0xBF) return false;
        p_ += extra + 1;
        return true;
    }

    bool string() {
        ++p_;  // opening quote
        for (;;) {
            // The hot loop: plain ASCII runs, a word at a time, then byte by byte up to what
            // ended the run.
            while (end_ - p_ >= 8) {
                std::uint64_t word;
                std::memcpy(&word, p_, sizeof word);
                if (ends_plain_run(word)) break;
                p_ += 8;
            }
            while (p_ < end_ && *p_ >= 0x20 && *p_ != '"' && *p_ != '\\' && *p_ < 0x80) ++p_;
            if (p_ == end_) return false;
            const unsigned char c = *p_;
            if (c == '"') {
                ++p_;
                return true;
            }
            if (c < 0x20) return false;  // raw control characters must be escaped
            if (c == '\\') {
                if (++p_ == end_) return false;
                const unsigned char e = *p_++;
                if (e == 'u') {
                    if (end_ - p_ < 4) return false;
                    for (int i = 0; i < 4; ++i)
                        if (!hex(*p_++)) return false;
                } else if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' &&
                           e != 'r' && e != 't') {
                    return false;
                }
                continue;
            }
            if (!utf8_sequence()) return false;
        }
    }

    // Iterative, with an explicit stack of open containers, so deep nesting cannot overflow.
    bool value() {
        std::vector<unsigned char> open;  // '{' or '['
        for (;;) {
            // Expecting a value.
            skip_space();
            if (p_ == end_) return false;
            const unsigned char c = *p_;
            if (c == '{' || c == '[') {
                if (open.size() >= max_depth_) {
                    too_deep_ = true;
                    return false;
                }
                open.push_back(c);
                ++p_;
                skip_space();
                if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
                    ++p_;
                    open.pop_back();
                } else {
                    if (c == '{' && !member_key()) return false;
                    continue;
                }
            } else if (c == '"') {
                if (!string()) return false;
            } else if (c == 't') {
                if (!literal("true")) return false;
            } else if (c == 'f') {
                if (!literal("false")) return false;
            } else if (c == 'n') {
                if (!literal("null")) return false;
            } else if (!number()) {
                return false;
            }
            // After a value: close containers or move to the next element.
            for (;;) {
                if (open.empty()) return true;
                skip_space();
                if (p_ == end_) return false;
                const unsigned char close = open.back() == '{' ? '}' : ']';
                if (*p_ == ',') {
                    ++p_;
                    if (open.back() == '{' && !member_key()) return false;
                    break;
                }
                if (*p_ != close) return false;
                ++p_;
                open.pop_back();
            }
        }
    }

    // `"key" :` inside an object.
    bool member_key() {
        skip_space();
        if (p_ == end_ || *p_ != '"' || !string()) return false;
        skip_space();
        if (p_ == end_ || *p_ != ':') return false;
        ++p_;
        return true;
    }

    const unsigned char* p_;
    const unsigned char* end_;
    std::size_t max_depth_;
    bool too_deep_ = false;
};

}  // namespace

json_check check_json(std::string_view text, std::size_t max_depth) {
    return validator(text, max_depth).run();
}

}  // namespace callisto::kernelproto
