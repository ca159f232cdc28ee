#include "gateway/egress/proxy_request.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "gateway/egress/egress_allowlist.hpp"

namespace callisto::gateway::egress {

namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool iequals(std::string_view a, std::string_view b) { return lower(a) == lower(b); }

// The fields that describe one hop, not the message (RFC 9110 7.6.1), plus the proxy's own.
bool hop_by_hop(std::string_view name) {
    static const std::set<std::string, std::less<>> names = {
        "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate",
        "te",         "trailer",          "upgrade",    "transfer-encoding",   "expect"};
    return names.contains(lower(name));
}

// The field names a Connection header lists are hop-by-hop too.
std::set<std::string> connection_named(const http::fields& fields) {
    std::set<std::string> named;
    for (auto it = fields.find(http::field::connection);
         it != fields.end() && it->name() == http::field::connection; ++it) {
        std::string_view v = it->value();
        while (!v.empty()) {
            const auto comma = v.find(',');
            auto token = v.substr(0, comma);
            while (!token.empty() && (token.front() == ' ' || token.front() == '\t'))
                token.remove_prefix(1);
            while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
                token.remove_suffix(1);
            if (!token.empty()) named.insert(lower(token));
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    }
    return named;
}

std::string fields_text(const http::fields& fields, bool keep_transfer_encoding) {
    const auto named = connection_named(fields);
    std::string out;
    for (const auto& f : fields) {
        const auto name = f.name_string();
        const bool kept_te = keep_transfer_encoding && iequals(name, "transfer-encoding");
        if (!kept_te && (hop_by_hop(name) || named.contains(lower(name)))) continue;
        if (!keep_transfer_encoding && iequals(name, "content-length")) continue;
        out.append(name.data(), name.size()).append(": ");
        out.append(f.value().data(), f.value().size()).append("\r\n");
    }
    return out;
}

// Host agrees with the URL's authority: the same host, and the same port (80 when absent).
bool host_matches(std::string_view host_field, const proxy_target& t) {
    auto split = split_authority(host_field);
    const auto* a = std::get_if<authority>(&split);
    if (!a) return false;
    return iequals(a->host, t.host) && a->port.value_or(80) == t.port;
}

}  // namespace

std::variant<proxy_target, bad_request> check_request(const http::request_header<>& header) {
    if (header.version() != 11 && header.version() != 10)
        return bad_request{"only HTTP/1.0 and HTTP/1.1"};
    const auto hosts = header.count(http::field::host);
    const auto lengths = header.count(http::field::content_length);
    const auto encodings = header.count(http::field::transfer_encoding);
    if (hosts > 1) return bad_request{"more than one Host"};
    // One way to know where the body ends, written once: anything else is how requests are
    // smuggled past a proxy that reads the length one way to a server that reads it another.
    if (lengths > 1) return bad_request{"more than one Content-Length"};
    if (lengths && encodings) return bad_request{"both Content-Length and Transfer-Encoding"};
    if (encodings > 1) return bad_request{"more than one Transfer-Encoding"};
    if (encodings && !iequals(header[http::field::transfer_encoding], "chunked"))
        return bad_request{"a Transfer-Encoding other than chunked"};
    if (header.count(http::field::upgrade)) return bad_request{"Upgrade through the proxy"};
    // 100-continue is the only expectation there is (RFC 9110 10.1.1); the proxy meets it
    // itself, so it is not sent on (a hop-by-hop field here). Anything else is a 417, and an
    // HTTP/1.0 client's 100-continue is ignored, as the RFC says a server must.
    bool expect_continue = false;
    if (const auto expects = header.count(http::field::expect); expects > 0) {
        if (expects > 1) return bad_request{"more than one Expect", 417};
        auto value = std::string_view(header[http::field::expect]);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.remove_suffix(1);
        if (!iequals(value, "100-continue"))
            return bad_request{"an expectation other than 100-continue", 417};
        expect_continue = header.version() == 11;
    }

    const std::string_view target = header.target();
    proxy_target out;
    if (header.method() == http::verb::connect) {
        if (lengths || encodings) return bad_request{"a CONNECT with a body"};
        auto split = split_authority(target);
        const auto* a = std::get_if<authority>(&split);
        if (!a) return bad_request{"CONNECT needs HOST:PORT: " + std::get<std::string>(split)};
        if (!a->port) return bad_request{"CONNECT needs HOST:PORT: no port"};
        out.tunnel = true;
        out.host = std::string(a->host);
        out.port = *a->port;
        if (hosts && !iequals(header[http::field::host], target))
            return bad_request{"Host does not match the CONNECT target"};
        return out;
    }
    // Absolute form only (RFC 9112 3.2.2): a proxy is asked for a whole URL. https:// goes
    // through CONNECT, so the proxy never sees what TLS protects.
    constexpr std::string_view scheme = "http://";
    if (target.size() < scheme.size() || !iequals(target.substr(0, scheme.size()), scheme))
        return bad_request{"the request target must be an absolute http:// URL"};
    const auto rest = target.substr(scheme.size());
    const auto end = rest.find_first_of("/?#");
    const auto host_port = rest.substr(0, end);
    if (host_port.find('@') != std::string_view::npos)
        return bad_request{"user information in the URL"};
    auto split = split_authority(host_port);
    const auto* a = std::get_if<authority>(&split);
    if (!a) return bad_request{"bad URL authority: " + std::get<std::string>(split)};
    out.host = std::string(a->host);
    out.port = a->port.value_or(80);
    auto path = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    if (path.find('#') != std::string_view::npos) return bad_request{"a fragment in the URL"};
    out.target = path.empty() || path.front() == '?' ? "/" + std::string(path) : std::string(path);
    for (char c : out.target)
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
            return bad_request{"a control character or space in the URL"};
    if (!hosts) return bad_request{"no Host"};
    if (!host_matches(header[http::field::host], out))
        return bad_request{"Host does not match the URL"};
    out.expect_continue = expect_continue;
    return out;
}

std::string forward_head(const http::request_header<>& header, const proxy_target& target,
                         std::optional<std::uint64_t> body_length) {
    std::string out(header.method_string());
    out += " " + target.target + " HTTP/1.1\r\n";
    out += fields_text(header, false);
    const bool has_body = !body_length || *body_length > 0 ||
                          header.count(http::field::content_length) ||
                          header.count(http::field::transfer_encoding);
    if (!body_length)
        out += "Transfer-Encoding: chunked\r\n";
    else if (has_body)
        out += "Content-Length: " + std::to_string(*body_length) + "\r\n";
    out += "Connection: close\r\n\r\n";
    return out;
}

std::string response_head(const http::response_header<>& header) {
    std::string out = "HTTP/1.1 " + std::to_string(header.result_int()) + " ";
    out.append(header.reason().data(), header.reason().size());
    out += "\r\n";
    out += fields_text(header, true);
    out += "Connection: close\r\n\r\n";
    return out;
}

std::string plain_answer(unsigned status, std::string_view reason_phrase, std::string_view body) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason_phrase) +
                      "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    out.append(body);
    return out;
}

}  // namespace callisto::gateway::egress
