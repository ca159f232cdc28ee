#include "gateway/http/router.hpp"

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

route method_not_allowed(std::string allow) {
    route r;
    r.kind = route_kind::method_not_allowed;
    r.allow = std::move(allow);
    return r;
}

// /v1/executions[/{eid}]: one-shot executions, each in a context of its own.
route match_v1_oneshot(std::string_view method, const std::vector<std::string>& seg, route r) {
    const std::size_t n = seg.size();
    if (n == 2) {
        if (method != "POST") return method_not_allowed("POST");
        r.kind = route_kind::oneshot_create;
        return r;
    }
    if (n != 3) return route{};
    r.execution_id = seg[2];
    if (method == "GET")
        r.kind = route_kind::oneshot_get;
    else if (method == "DELETE")
        r.kind = route_kind::oneshot_delete;
    else
        return method_not_allowed("GET, DELETE");
    return r;
}

// /v1/languages, /v1/whoami, /v1/admin/overview, and /v1/contexts[/{id}[/restart | /events |
// /executions[/{eid}] | /files[/{path...}]]]
route match_v1(std::string_view method, const std::vector<std::string>& seg, route r) {
    const std::size_t n = seg.size();
    if (n >= 2 && seg[1] == "executions") return match_v1_oneshot(method, seg, std::move(r));
    const bool get_only = (n == 2 && (seg[1] == "languages" || seg[1] == "whoami")) ||
                          (n == 3 && seg[1] == "admin" && seg[2] == "overview");
    if (get_only) {
        if (method != "GET") return method_not_allowed("GET");
        r.kind = seg[1] == "languages" ? route_kind::languages_list
                 : seg[1] == "whoami"  ? route_kind::whoami
                                       : route_kind::admin_overview;
        return r;
    }
    if (n < 2 || seg[1] != "contexts") return r;
    if (n >= 4 && seg[3] == "files") {
        r.context_id = seg[2];
        if (n == 4) {
            if (method == "GET")
                r.kind = route_kind::files_list;
            else if (method == "POST")
                r.kind = route_kind::files_upload;
            else
                return method_not_allowed("GET, POST");
            return r;
        }
        for (std::size_t i = 4; i < n; ++i) r.file += (i > 4 ? "/" : "") + seg[i];
        if (method == "GET")
            r.kind = route_kind::file_get;
        else if (method == "PUT")
            r.kind = route_kind::file_put;
        else if (method == "DELETE")
            r.kind = route_kind::file_delete;
        else
            return method_not_allowed("GET, PUT, DELETE");
        return r;
    }
    if (n > 5) return route{};
    if (n == 2) {
        if (method == "GET")
            r.kind = route_kind::contexts_list;
        else if (method == "POST")
            r.kind = route_kind::context_create;
        else
            return method_not_allowed("GET, POST");
        return r;
    }
    r.context_id = seg[2];
    if (n == 3) {
        if (method == "GET")
            r.kind = route_kind::context_get;
        else if (method == "DELETE")
            r.kind = route_kind::context_delete;
        else
            return method_not_allowed("GET, DELETE");
        return r;
    }
    if (n == 4 && seg[3] == "restart") {
        if (method != "POST") return method_not_allowed("POST");
        r.kind = route_kind::context_restart;
        return r;
    }
    if (n == 4 && seg[3] == "events") {
        if (method != "GET") return method_not_allowed("GET");
        r.kind = route_kind::context_events;
        return r;
    }
    if (seg[3] != "executions") return route{};
    if (n == 4) {
        if (method == "GET")
            r.kind = route_kind::executions_list;
        else if (method == "POST")
            r.kind = route_kind::execution_create;
        else
            return method_not_allowed("GET, POST");
        return r;
    }
    r.execution_id = seg[4];
    if (method == "GET")
        r.kind = route_kind::execution_get;
    else if (method == "DELETE")
        r.kind = route_kind::execution_delete;
    else
        return method_not_allowed("GET, DELETE");
    return r;
}

// E2B's paths (gateway/e2b/): the control plane's /v2/sandboxes and /sandboxes/{id}, and the
// sandbox's own (/execute, /contexts, /files, /health, envd's Connect services), which the SDK
// sends to the one URL E2B_SANDBOX_URL names. Unmatched: not_found, left to the rest.
route match_e2b(std::string_view method, const std::vector<std::string>& seg, route r) {
    const std::size_t n = seg.size();
    auto is = [&](route_kind k, std::string_view allowed) {
        // allowed is "GET", "POST", "GET, POST", "GET, DELETE"
        const bool ok = (method == "GET" && allowed.find("GET") != std::string_view::npos) ||
                        (method == "POST" && allowed.find("POST") != std::string_view::npos) ||
                        (method == "DELETE" && allowed.find("DELETE") != std::string_view::npos);
        if (!ok) return method_not_allowed(std::string(allowed));
        r.kind = k;
        return r;
    };
    if (seg[0] == "v2" && n >= 2 && seg[1] == "sandboxes") {
        if (n == 2) return is(route_kind::e2b_sandboxes, "GET, POST");
        r.name = seg[2];
        if (n == 4 && seg[3] == "connect") return is(route_kind::e2b_sandbox_connect, "POST");
        return route{};
    }
    if (seg[0] == "sandboxes") {
        if (n == 1) return is(route_kind::e2b_sandboxes, "GET");
        r.name = seg[1];
        if (n == 2) return is(route_kind::e2b_sandbox, "GET, DELETE");
        if (n == 3 && seg[2] == "timeout") return is(route_kind::e2b_sandbox_timeout, "POST");
        return route{};
    }
    if (n == 1 && seg[0] == "execute") return is(route_kind::e2b_execute, "POST");
    if (n == 1 && seg[0] == "files") return is(route_kind::e2b_files, "GET, POST");
    if (n == 1 && seg[0] == "health") return is(route_kind::e2b_health, "GET");
    if (seg[0] == "contexts") {
        if (n == 1) return is(route_kind::e2b_contexts, "GET, POST");
        r.context_id = seg[1];
        if (n == 2) return is(route_kind::e2b_context, "DELETE");
        if (n == 3 && seg[2] == "restart") return is(route_kind::e2b_context_restart, "POST");
        return route{};
    }
    if (n == 2 && (seg[0] == "filesystem.Filesystem" || seg[0] == "process.Process")) {
        r.name = seg[0];
        r.file = seg[1];
        return is(route_kind::e2b_rpc, "POST");
    }
    return route{};
}

}  // namespace

bool is_e2b_route(route_kind kind) {
    return kind >= route_kind::e2b_sandboxes && kind <= route_kind::e2b_rpc;
}

bool is_interpreter_route(route_kind kind) {
    switch (kind) {
        case route_kind::contexts_list:
        case route_kind::context_create:
        case route_kind::context_get:
        case route_kind::context_delete:
        case route_kind::context_restart:
        case route_kind::executions_list:
        case route_kind::execution_create:
        case route_kind::execution_get:
        case route_kind::execution_delete:
        case route_kind::files_list:
        case route_kind::files_upload:
        case route_kind::context_events:
        case route_kind::file_get:
        case route_kind::file_put:
        case route_kind::file_delete:
        case route_kind::oneshot_create:
        case route_kind::oneshot_get:
        case route_kind::oneshot_delete:
        case route_kind::languages_list: return true;
        default: return false;
    }
}

bool is_public_route(route_kind kind) {
    // E2B's data plane carries the sandbox's access token, not the user's: the facade
    // checks it (gateway/e2b/e2b_api.cpp).
    return kind == route_kind::api_info || kind == route_kind::openapi_document ||
           kind == route_kind::healthz || kind == route_kind::readyz ||
           kind == route_kind::static_file ||
           (is_e2b_route(kind) && kind >= route_kind::e2b_execute);
}

std::string_view to_string(route_kind kind) {
    // No default: a new kind without a name here is a compiler warning.
    switch (kind) {
        case route_kind::not_found: return "not_found";
        case route_kind::method_not_allowed: return "method_not_allowed";
        case route_kind::api_info: return "api_info";
        case route_kind::openapi_document: return "openapi_document";
        case route_kind::healthz: return "healthz";
        case route_kind::readyz: return "readyz";
        case route_kind::metrics: return "metrics";
        case route_kind::kernelspecs_list: return "kernelspecs_list";
        case route_kind::kernelspec_get: return "kernelspec_get";
        case route_kind::kernelspec_resource: return "kernelspec_resource";
        case route_kind::kernels_list: return "kernels_list";
        case route_kind::kernel_create: return "kernel_create";
        case route_kind::kernel_get: return "kernel_get";
        case route_kind::kernel_delete: return "kernel_delete";
        case route_kind::kernel_interrupt: return "kernel_interrupt";
        case route_kind::kernel_restart: return "kernel_restart";
        case route_kind::kernel_channels: return "kernel_channels";
        case route_kind::static_file: return "static_file";
        case route_kind::contexts_list: return "contexts_list";
        case route_kind::context_create: return "context_create";
        case route_kind::context_get: return "context_get";
        case route_kind::context_delete: return "context_delete";
        case route_kind::context_restart: return "context_restart";
        case route_kind::executions_list: return "executions_list";
        case route_kind::execution_create: return "execution_create";
        case route_kind::execution_get: return "execution_get";
        case route_kind::execution_delete: return "execution_delete";
        case route_kind::files_list: return "files_list";
        case route_kind::file_get: return "file_get";
        case route_kind::file_put: return "file_put";
        case route_kind::file_delete: return "file_delete";
        case route_kind::oneshot_create: return "oneshot_create";
        case route_kind::oneshot_get: return "oneshot_get";
        case route_kind::oneshot_delete: return "oneshot_delete";
        case route_kind::languages_list: return "languages_list";
        case route_kind::whoami: return "whoami";
        case route_kind::admin_overview: return "admin_overview";
        case route_kind::files_upload: return "files_upload";
        case route_kind::context_events: return "context_events";
        case route_kind::mcp: return "mcp";
        case route_kind::bad_v1_path: return "bad_v1_path";
        case route_kind::e2b_sandboxes: return "e2b_sandboxes";
        case route_kind::e2b_sandbox: return "e2b_sandbox";
        case route_kind::e2b_sandbox_timeout: return "e2b_sandbox_timeout";
        case route_kind::e2b_sandbox_connect: return "e2b_sandbox_connect";
        case route_kind::e2b_execute: return "e2b_execute";
        case route_kind::e2b_contexts: return "e2b_contexts";
        case route_kind::e2b_context: return "e2b_context";
        case route_kind::e2b_context_restart: return "e2b_context_restart";
        case route_kind::e2b_files: return "e2b_files";
        case route_kind::e2b_health: return "e2b_health";
        case route_kind::e2b_rpc: return "e2b_rpc";
        case route_kind::route_kind_count: break;
    }
    return "unknown";
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

namespace {

route match_method(std::string_view method, std::string_view target, bool static_files_enabled) {
    route r;
    std::string_view path = target;
    if (auto q = target.find('?'); q != std::string_view::npos) {
        path = target.substr(0, q);
        r.query = std::string(target.substr(q + 1));
    }
    if (path.empty() || path.front() != '/') return r;

    std::vector<std::string> seg;
    if (!split_path(path, seg)) {
        // The agent API says why instead of an unexplained 404.
        if (path.starts_with("/v1/")) r.kind = route_kind::bad_v1_path;
        return r;
    }
    const bool get = method == "GET";
    const bool post = method == "POST";
    const bool del = method == "DELETE";
    const std::size_t n = seg.size();

    if (n >= 1 && seg[0] == "api") {
        if (n == 1) {
            if (!get) return method_not_allowed("GET");
            r.kind = route_kind::api_info;
            return r;
        }
        if (seg[1] == "kernelspecs") {
            if (n > 3) return r;
            if (!get) return method_not_allowed("GET");
            r.kind = n == 2 ? route_kind::kernelspecs_list : route_kind::kernelspec_get;
            if (n == 3) r.name = seg[2];
            return r;
        }
        if (seg[1] == "kernels") {
            if (n == 2) {
                if (get)
                    r.kind = route_kind::kernels_list;
                else if (post)
                    r.kind = route_kind::kernel_create;
                else
                    return method_not_allowed("GET, POST");
                return r;
            }
            r.kernel_id = seg[2];
            if (n == 3) {
                if (get)
                    r.kind = route_kind::kernel_get;
                else if (del)
                    r.kind = route_kind::kernel_delete;
                else
                    return method_not_allowed("GET, DELETE");
                return r;
            }
            if (n == 4) {
                if (seg[3] == "interrupt" || seg[3] == "restart") {
                    if (!post) return method_not_allowed("POST");
                    r.kind = seg[3] == "interrupt" ? route_kind::kernel_interrupt
                                                   : route_kind::kernel_restart;
                    return r;
                }
                if (seg[3] == "channels") {
                    if (!get) return method_not_allowed("GET");
                    r.kind = route_kind::kernel_channels;
                    return r;
                }
            }
            r.kernel_id.clear();
            return r;
        }
        return r;
    }
    if (n >= 1 && seg[0] == "v1") return match_v1(method, seg, std::move(r));
    if (n == 1 && seg[0] == "mcp") {
        if (!post && !del) return method_not_allowed("POST, DELETE");
        r.kind = route_kind::mcp;
        return r;
    }
    if (n == 1 && seg[0] == "openapi.json") {
        if (!get) return method_not_allowed("GET");
        r.kind = route_kind::openapi_document;
        return r;
    }
    if (n == 1 && (seg[0] == "healthz" || seg[0] == "readyz")) {
        if (!get) return method_not_allowed("GET");
        r.kind = seg[0] == "healthz" ? route_kind::healthz : route_kind::readyz;
        return r;
    }
    if (n == 1 && seg[0] == "metrics") {
        if (!get) return method_not_allowed("GET");
        r.kind = route_kind::metrics;
        return r;
    }
    if (n == 3 && seg[0] == "kernelspecs") {
        if (!get) return method_not_allowed("GET");
        r.kind = route_kind::kernelspec_resource;
        r.name = seg[1];
        r.file = seg[2];
        return r;
    }
    if (n >= 1) {
        // Before the web UI's files: E2B's paths are the API's wherever a web root is.
        route e = match_e2b(method, seg, r);
        if (e.kind != route_kind::not_found) return e;
    }
    if (static_files_enabled && get) {
        r.kind = route_kind::static_file;
        for (std::size_t i = 0; i < n; ++i) r.file += (i ? "/" : "") + seg[i];
        return r;
    }
    return r;
}

bool is_websocket_route(route_kind kind) {
    return kind == route_kind::kernel_channels || kind == route_kind::context_events;
}

}  // namespace

route match_route(std::string_view method, std::string_view target, bool static_files_enabled) {
    // HEAD is GET without the body (the session drops it), wherever GET is but on the
    // WebSocket routes, which only an upgrade uses. Allow keeps naming the methods the API
    // documents; HEAD goes with GET, as in HTTP.
    const bool head = method == "HEAD";
    route r = match_method(head ? "GET" : method, target, static_files_enabled);
    if (head && is_websocket_route(r.kind)) return method_not_allowed("GET");
    return r;
}

}  // namespace callisto::gateway
