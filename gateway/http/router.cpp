#include "gateway/http/router.hpp"

#include <stdexcept>
#include <vector>

namespace callisto::gateway {
namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Splits "/a/b/" into {"a","b"}; false when a segment fails to decode or is unsafe.
bool split_path(std::string_view path, std::vector<std::string>& segments) {
    std::size_t pos = 1;  // skip the leading '/'
    while (pos <= path.size()) {
        std::size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) slash = path.size();
        std::string_view raw = path.substr(pos, slash - pos);
        pos = slash + 1;
        if (raw.empty()) {
            if (slash == path.size()) break;  // trailing slash
            return false;                     // "//" inside the path
        }
        std::string decoded;
        if (!percent_decode(raw, decoded)) return false;
        if (decoded == "." || decoded == ".." ||
            decoded.find_first_of(std::string_view("/\0", 2)) != std::string::npos)
            return false;
        segments.push_back(std::move(decoded));
    }
    return true;
}

// Callisto's URL space apart from its routes. A path whose first segment is one of these
// belongs to an API (Jupyter's /api, Callisto's /v1): one that no route has is 404, never a
// file of the web UI.
constexpr std::string_view api_prefixes[] = {"api", "v1"};
// The agent API says why it refuses an unsafe path (400) instead of an unexplained 404.
constexpr std::string_view explained_prefix = "/v1/";

bool is_method_token(std::string_view m) {
    if (m.empty()) return false;
    for (char c : m)
        if (c < 'A' || c > 'Z') return false;
    return true;
}

bool is_parameter_name(std::string_view name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
}

template <class T>
bool contains(const std::vector<T>& list, const T& value) {
    for (const auto& v : list)
        if (v == value) return true;
    return false;
}

std::string join(const std::vector<std::string>& parts, std::size_t from, std::string_view sep) {
    std::string out;
    for (std::size_t i = from; i < parts.size(); ++i) {
        if (i > from) out += sep;
        out += parts[i];
    }
    return out;
}

}  // namespace

std::string_view route_match::name() const {
    switch (result) {
        case outcome::found: return spec.name;
        case outcome::not_found: return "not_found";
        case outcome::method_not_allowed: return "method_not_allowed";
        case outcome::bad_path: return "bad_v1_path";
    }
    return "not_found";
}

const std::string& route_match::param(std::string_view wanted) const {
    for (const auto& [name, value] : params)
        if (name == wanted) return value;
    throw std::logic_error("route " + std::string(this->name()) + " has no path parameter {" +
                           std::string(wanted) + "}");
}

std::size_t router::add(const route_spec& spec) {
    auto bad = [&spec](const std::string& why) {
        return std::invalid_argument("route " + std::string(spec.name) + " (" +
                                     std::string(spec.path) + "): " + why);
    };
    if (spec.name.empty()) throw bad("a route needs a name");
    for (const auto& r : routes_)
        if (r.spec.name == spec.name) throw bad("a second route of this name");
    compiled c{spec, {}, {}};
    // "GET" or "POST, DELETE"
    for (std::string_view rest = spec.methods; !rest.empty();) {
        const auto comma = rest.find(',');
        std::string_view m = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
        while (!m.empty() && m.back() == ' ') m.remove_suffix(1);
        if (!is_method_token(m))
            throw bad("'" + std::string(spec.methods) + "' is not a method list");
        if (m == "HEAD") throw bad("HEAD goes with GET, it is not declared");
        if (contains(c.methods, m)) throw bad("a method listed twice");
        c.methods.push_back(m);
    }
    if (c.methods.empty()) throw bad("a route needs a method");
    // "/a/{b}/c/{d...}"
    const std::string_view path = spec.path;
    if (path.empty() || path.front() != '/') throw bad("a path template begins with '/'");
    for (std::size_t pos = 1; pos <= path.size();) {
        std::size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) slash = path.size();
        const std::string_view text = path.substr(pos, slash - pos);
        pos = slash + 1;
        if (text.empty()) throw bad("an empty segment");
        if (!c.segments.empty() && c.segments.back().rest)
            throw bad("a {name...} parameter is the last segment");
        segment s;
        if (text.front() == '{') {
            if (text.size() < 3 || text.back() != '}') throw bad("a parameter is '{name}'");
            s.text = text.substr(1, text.size() - 2);
            s.parameter = true;
            if (s.text.size() > 3 && s.text.substr(s.text.size() - 3) == "...") {
                s.text.remove_suffix(3);
                s.rest = true;
            }
            if (!is_parameter_name(s.text))
                throw bad("'" + std::string(s.text) + "' is not a parameter name");
            for (const auto& other : c.segments)
                if (other.parameter && other.text == s.text) throw bad("a parameter named twice");
        } else {
            if (text.find_first_of("{}%") != std::string_view::npos || text == "." || text == "..")
                throw bad("'" + std::string(text) + "' is not a literal segment");
            s.text = text;
        }
        c.segments.push_back(s);
    }
    if (spec.type == route_type::fallback) {
        if (fallback_) throw bad("a second fallback route");
        if (c.segments.size() != 1 || !c.segments[0].rest)
            throw bad("a fallback's path is \"/{name...}\"");
        fallback_ = routes_.size();
    }
    routes_.push_back(std::move(c));
    return routes_.size() - 1;
}

bool router::matches(const compiled& route, const std::vector<std::string>& path,
                     std::vector<std::pair<std::string_view, std::string>>& params) {
    params.clear();
    std::size_t i = 0;
    for (; i < route.segments.size(); ++i) {
        const segment& s = route.segments[i];
        if (i >= path.size()) return false;
        if (s.rest) {
            params.emplace_back(s.text, join(path, i, "/"));
            return true;
        }
        if (s.parameter)
            params.emplace_back(s.text, path[i]);
        else if (s.text != path[i])
            return false;
    }
    return i == path.size();
}

route_match router::match(std::string_view method, std::string_view target) const {
    route_match m;
    std::string_view path = target;
    if (auto q = target.find('?'); q != std::string_view::npos) {
        path = target.substr(0, q);
        m.query = std::string(target.substr(q + 1));
    }
    if (path.empty() || path.front() != '/') return m;
    std::vector<std::string> seg;
    if (!split_path(path, seg)) {
        if (path.starts_with(explained_prefix)) m.result = route_match::outcome::bad_path;
        return m;
    }
    // HEAD is GET without the body (the session drops it), wherever GET is but on the
    // WebSocket routes, which only an upgrade uses. Allow names the declared methods.
    const bool head = method == "HEAD";
    const std::string_view wanted = head ? std::string_view("GET") : method;
    auto takes = [&](const compiled& r) {
        return !(head && r.spec.type == route_type::websocket) && contains(r.methods, wanted);
    };
    std::vector<std::string_view> allowed;
    std::vector<std::pair<std::string_view, std::string>> params;
    for (std::size_t i = 0; i < routes_.size(); ++i) {
        const compiled& r = routes_[i];
        if (r.spec.type == route_type::fallback || !matches(r, seg, params)) continue;
        if (takes(r)) {
            m.result = route_match::outcome::found;
            m.spec = r.spec;
            m.index = i;
            m.params = std::move(params);
            return m;
        }
        for (auto declared : r.methods)
            if (!contains(allowed, declared)) allowed.push_back(declared);
    }
    if (!allowed.empty()) {
        m.result = route_match::outcome::method_not_allowed;
        for (std::size_t i = 0; i < allowed.size(); ++i)
            m.allow += (i ? ", " : "") + std::string(allowed[i]);
        return m;
    }
    if (!fallback_) return m;
    for (auto prefix : api_prefixes)
        if (!seg.empty() && seg[0] == prefix) return m;
    const compiled& r = routes_[*fallback_];
    if (!takes(r)) return m;
    m.result = route_match::outcome::found;
    m.spec = r.spec;
    m.index = *fallback_;
    m.params.emplace_back(r.segments[0].text, join(seg, 0, "/"));
    return m;
}

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space) {
    out.clear();
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= in.size()) return false;
            int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
            if (hi < 0 || lo < 0) return false;
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return true;
}

std::string query_param(std::string_view query, std::string_view key) {
    while (!query.empty()) {
        std::size_t amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        std::size_t eq = pair.find('=');
        std::string name, value;
        if (!percent_decode(pair.substr(0, eq), name, true)) continue;
        if (name != key) continue;
        if (eq != std::string_view::npos && percent_decode(pair.substr(eq + 1), value, true))
            return value;
        return {};
    }
    return {};
}

bool is_valid_kernel_id(std::string_view id) {
    if (id.size() != 36) return false;
    for (std::size_t i = 0; i < id.size(); ++i) {
        char c = id[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

}  // namespace callisto::gateway
