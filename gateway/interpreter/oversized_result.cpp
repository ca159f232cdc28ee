#include "gateway/interpreter/oversized_result.hpp"

namespace callisto::gateway::interpreter {

bool is_base64_mime(std::string_view mime) {
    return (mime.starts_with("image/") && mime != "image/svg+xml") || mime == "application/pdf";
}

std::string file_extension_for(std::string_view mime) {
    if (mime == "image/png") return ".png";
    if (mime == "image/jpeg") return ".jpg";
    if (mime == "image/gif") return ".gif";
    if (mime == "image/webp") return ".webp";
    if (mime == "image/svg+xml") return ".svg";
    if (mime == "application/pdf") return ".pdf";
    if (mime == "text/html") return ".html";
    if (mime == "text/markdown") return ".md";
    if (mime == "text/plain") return ".txt";
    if (mime == "application/json" || mime.ends_with("+json")) return ".json";
    return ".bin";
}

std::optional<std::string> decode_base64(std::string_view text) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::string out;
    out.reserve(text.size() / 4 * 3);
    unsigned buffer = 0;
    int bits = 0;
    std::size_t padding = 0, symbols = 0;
    for (char c : text) {
        if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
        if (c == '=') {
            ++padding;
            ++symbols;
            continue;
        }
        if (padding) return std::nullopt;  // data after padding
        const int v = value(c);
        if (v < 0) return std::nullopt;
        ++symbols;
        buffer = (buffer << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((buffer >> bits) & 0xff));
        }
    }
    if (symbols % 4 != 0 || padding > 2) return std::nullopt;
    return out;
}

}  // namespace callisto::gateway::interpreter
