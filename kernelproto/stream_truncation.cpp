#include "kernelproto/stream_truncation.hpp"

#include <cstring>

namespace callisto::kernelproto {

namespace {

constexpr auto npos = std::string_view::npos;

std::size_t skip_space(std::string_view t, std::size_t i) {
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n')) ++i;
    return i;
}

// t[i] is '"': the index just after the closing quote, or npos.
std::size_t skip_string(std::string_view t, std::size_t i) {
    for (++i; i < t.size();) {
        if (t[i] == '"') return i + 1;
        i += t[i] == '\\' ? 2 : 1;
    }
    return npos;
}

// Any JSON value starting at t[i]: the index just after it, or npos.
std::size_t skip_value(std::string_view t, std::size_t i) {
    if (i >= t.size()) return npos;
    if (t[i] == '"') return skip_string(t, i);
    if (t[i] == '{' || t[i] == '[') {
        std::size_t depth = 0;
        while (i < t.size()) {
            const char c = t[i];
            if (c == '"') {
                i = skip_string(t, i);
                if (i == npos) return npos;
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
            ++i;
        }
        return npos;
    }
    while (i < t.size() && !std::strchr(",}] \t\r\n", t[i])) ++i;
    return i;
}

unsigned hex_value(std::string_view hex) {
    unsigned v = 0;
    for (char c : hex) {
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= static_cast<unsigned>(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= static_cast<unsigned>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= static_cast<unsigned>(c - 'A' + 10);
        else
            return 0;  // not hex: treated as an ordinary escape
    }
    return v;
}

// Length of the character (escape, surrogate pair or UTF-8 sequence) at body[i].
std::size_t unit_length(std::string_view body, std::size_t i) {
    const auto c = static_cast<unsigned char>(body[i]);
    if (c == '\\') {
        if (i + 1 < body.size() && body[i + 1] == 'u' && i + 6 <= body.size()) {
            const unsigned high = hex_value(body.substr(i + 2, 4));
            if (high >= 0xd800 && high <= 0xdbff && i + 12 <= body.size() && body[i + 6] == '\\' &&
                body[i + 7] == 'u') {
                const unsigned low = hex_value(body.substr(i + 8, 4));
                if (low >= 0xdc00 && low <= 0xdfff) return 12;
            }
            return 6;
        }
        return 2;
    }
    if (c < 0x80) return 1;
    if (c >= 0xf0) return 4;
    if (c >= 0xe0) return 3;
    if (c >= 0xc0) return 2;
    return 1;  // a stray continuation byte: keep the cut moving
}

// The longest prefix of the string body (raw, escapes as written) of at most `room` bytes
// that ends between two characters.
std::size_t safe_prefix(std::string_view body, std::size_t room) {
    if (room >= body.size()) return body.size();
    std::size_t i = 0;
    while (i < room) {
        // Plain runs up to the next escape are skipped at memchr speed.
        const void* esc = std::memchr(body.data() + i, '\\', room - i);
        if (!esc) {
            // No escape before the cut: back up to the start of a UTF-8 sequence that fits.
            std::size_t cut = room;
            while (cut > i && (static_cast<unsigned char>(body[cut]) & 0xc0) == 0x80) --cut;
            return cut;
        }
        const auto at = static_cast<std::size_t>(static_cast<const char*>(esc) - body.data());
        // The characters before the escape all fit (at < room); now the escape itself.
        const std::size_t len = unit_length(body, at);
        if (at + len > room) return at;
        i = at + len;
    }
    return i;
}

}  // namespace

std::optional<std::string> truncate_stream_text(std::string_view content, std::size_t max_bytes) {
    std::size_t i = skip_space(content, 0);
    if (i >= content.size() || content[i] != '{') return std::nullopt;
    i = skip_space(content, i + 1);
    while (i < content.size() && content[i] == '"') {
        const std::size_t key_end = skip_string(content, i);
        if (key_end == npos) return std::nullopt;
        const std::string_view key = content.substr(i + 1, key_end - i - 2);
        i = skip_space(content, key_end);
        if (i >= content.size() || content[i] != ':') return std::nullopt;
        i = skip_space(content, i + 1);
        const std::size_t value_end = skip_value(content, i);
        if (value_end == npos) return std::nullopt;
        if (key == "text" && content[i] == '"') {
            const std::size_t body_start = i + 1, body_end = value_end - 1;
            const std::string_view body = content.substr(body_start, body_end - body_start);
            const std::size_t overhead = content.size() - body.size();
            if (content.size() <= max_bytes) return std::string(content);
            if (max_bytes <= overhead) return std::nullopt;
            const std::size_t keep = safe_prefix(body, max_bytes - overhead);
            if (keep == 0) return std::nullopt;
            std::string out;
            out.reserve(overhead + keep);
            out.append(content.substr(0, body_start + keep));
            out.append(content.substr(body_end));
            return out;
        }
        i = skip_space(content, value_end);
        if (i < content.size() && content[i] == ',') i = skip_space(content, i + 1);
    }
    return std::nullopt;
}

}  // namespace callisto::kernelproto
