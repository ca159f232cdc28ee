#include "gateway/http/content_headers.hpp"

#include <array>

#include <boost/beast/http/field.hpp>

namespace callisto::gateway {

namespace {

// The same as web/index.html's <meta> policy, plus frame-ancestors, which a <meta> cannot set.
// Both are enforced; keep them equal. style-src needs 'unsafe-inline' for the <style> in the
// srcdoc frames of kernel HTML, which inherit this policy.
constexpr std::string_view web_ui_csp =
    "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; script-src 'self'; frame-src 'self' about:; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::string_view media_type(std::string_view content_type) {
    auto end = content_type.find(';');
    auto type = content_type.substr(0, end);
    while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
    return type;
}

bool attr_char(unsigned char c) {  // RFC 8187 attr-char
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$&+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

void set_common(http::response_header<>& res) {
    res.set("X-Content-Type-Options", "nosniff");
    res.set("Referrer-Policy", "no-referrer");
}

}  // namespace

bool renders_passively(std::string_view content_type) {
    static constexpr std::array<std::string_view, 7> passive = {
        "image/png",  "image/jpeg", "image/gif",       "image/webp",
        "text/plain", "text/csv",   "application/json"};
    const auto type = media_type(content_type);
    for (auto p : passive)
        if (type == p) return true;
    return false;
}

std::string attachment_disposition(std::string_view path) {
    auto slash = path.rfind('/');
    auto name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    if (name.empty()) return "attachment";
    std::string ascii, encoded;
    static constexpr char hex[] = "0123456789ABCDEF";
    for (unsigned char c : name) {
        ascii += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '%') ? char(c) : '_';
        if (attr_char(c)) {
            encoded += char(c);
        } else {
            encoded += '%';
            encoded += hex[c >> 4];
            encoded += hex[c & 0xf];
        }
    }
    return "attachment; filename=\"" + ascii + "\"; filename*=UTF-8''" + encoded;
}

void set_untrusted_file_headers(http::response_header<>& res, std::string_view path) {
    set_common(res);
    res.set("Content-Security-Policy", untrusted_file_csp);
    if (!renders_passively(res[http::field::content_type]))
        res.set(http::field::content_disposition, attachment_disposition(path));
}

void set_web_ui_headers(http_response& res) {
    set_common(res);
    res.set("Content-Security-Policy", web_ui_csp);
    res.set(http::field::x_frame_options, "DENY");
}

}  // namespace callisto::gateway
