#pragma once
// Maps a request line to a route of those declared in the route table (gateway/routes.cpp),
// and the URL pieces handlers read. Pure: no I/O, so every path form is unit-tested.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace callisto::gateway {

// Who may call a route. A request without a valid token gets 401 on every route but the open
// ones; a valid token that is not an admin's gets 403 on the admin ones, before its body is read.
enum class route_access {
    open,   // no token: GET /api, the probes, the OpenAPI document, the web UI
    token,  // any user's valid token (each handler checks who owns what it touches)
    admin,  // an admin's token
    // No user's token: the handler checks a credential of the route's own and answers 401
    // itself (E2B's data plane: the sandbox's access token, gateway/e2b/).
    own_token,
};

enum class route_type {
    plain,      // answered with an HTTP response (or a stream the handler takes over)
    websocket,  // taken over by a WebSocket upgrade: HEAD does not match it as GET
    // The route of every path no other route has (the web UI's files). Its path is
    // "/{name...}" and also matches "/" (as ""); it never matches under an API prefix ("/api",
    // "/v1") and never turns a wrong method into 405. One a router at most.
    fallback,
};

// One route as its table row declares it, to the HTTP server. The strings are the table's
// literals: they outlive every router and match made from them.
struct route_spec {
    // For the access log and the metrics' route label: "context_get". Unique in a table.
    std::string_view name;
    // "GET", or several as the Allow header lists them: "POST, DELETE". HEAD matches as GET
    // (its answer is GET's without the body) but on WebSocket routes.
    std::string_view methods;
    // A path template: literal segments and named parameters, each a whole segment:
    // "/api/kernels/{kernel_id}". A last parameter "{path...}" takes one or more segments
    // ("/v1/contexts/{context_id}/files/{path...}", joined with '/').
    std::string_view path;
    route_access access = route_access::token;
    route_type type = route_type::plain;
};

// What a request line matched.
struct route_match {
    enum class outcome {
        found,               // `spec` is the route
        not_found,           // no route has this path
        method_not_allowed,  // routes have this path, not with this method: `allow` lists theirs
        bad_path,            // an unsafe /v1 path ("..", "%2F", NUL, "//"): 400, saying why
    };
    outcome result = outcome::not_found;
    route_spec spec;        // when found
    std::size_t index = 0;  // when found: the route's place in its router
    std::vector<std::pair<std::string_view, std::string>> params;  // decoded, by name
    std::string query;                                             // raw, without '?'
    std::string allow;                                             // for method_not_allowed

    bool found() const { return result == outcome::found; }
    // The route's name, or the outcome's ("not_found", "method_not_allowed", "bad_v1_path"):
    // the access log's and the metrics' label.
    std::string_view name() const;
    // A path parameter's value. Asking for a name the route's template has not is a
    // programmer's error: std::logic_error.
    const std::string& param(std::string_view name) const;
};

// Matches request lines against routes, in the order they were added: for a method the first
// route whose template matches wins; a path that some route has, with other methods only,
// is method_not_allowed with their methods in Allow, in order. Pure: every path form is
// unit-tested.
class router {
public:
    // Throws std::invalid_argument for a malformed template, method list or a second
    // fallback: these are the table's, found at start.
    std::size_t add(const route_spec& spec);

    // `target` is the request-target as sent ("/api/kernels/abc?token=x"). Trailing slashes
    // are accepted as jupyter_server does. Percent-escapes are decoded in path segments; a
    // path with a segment that decodes to "", ".", ".." or holds '/' or NUL matches nothing.
    route_match match(std::string_view method, std::string_view target) const;

    std::size_t size() const { return routes_.size(); }
    const route_spec& spec(std::size_t index) const { return routes_[index].spec; }

private:
    struct segment {
        std::string_view text;  // a literal, or a parameter's name
        bool parameter = false;
        bool rest = false;  // "{name...}": this and every later segment
    };
    struct compiled {
        route_spec spec;
        std::vector<segment> segments;
        std::vector<std::string_view> methods;
    };
    static bool matches(const compiled& route, const std::vector<std::string>& path,
                        std::vector<std::pair<std::string_view, std::string>>& params);
    std::vector<compiled> routes_;
    std::optional<std::size_t> fallback_;
};

// Value of `key` in an application/x-www-form-urlencoded query string, decoded; "" if absent.
std::string query_param(std::string_view query, std::string_view key);

// Decodes %XX and '+' (as space when plus_is_space). Returns false on a malformed escape.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space = false);

// A kernel id as Callisto makes them (canonical UUID text, lower case). Clients may choose
// their own id on create, and it must pass this too.
bool is_valid_kernel_id(std::string_view id);

}  // namespace callisto::gateway
