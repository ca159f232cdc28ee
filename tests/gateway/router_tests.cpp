#include "gateway/http/router.hpp"

#include <doctest/doctest.h>

using namespace callisto::gateway;

namespace {
const std::string id = "0f1e2d3c-4b5a-4968-8776-655443322110";
route get(std::string_view target) { return match_route("GET", target, false); }
}  // namespace

TEST_CASE("router maps every Kernel Gateway route") {
    CHECK(get("/api").kind == route_kind::api_info);
    CHECK(get("/api/").kind == route_kind::api_info);
    CHECK(get("/api/kernelspecs").kind == route_kind::kernelspecs_list);
    auto spec = get("/api/kernelspecs/python3");
    CHECK(spec.kind == route_kind::kernelspec_get);
    CHECK(spec.name == "python3");
    auto res = get("/kernelspecs/python3/logo-64x64.png");
    CHECK(res.kind == route_kind::kernelspec_resource);
    CHECK(res.file == "logo-64x64.png");
    CHECK(get("/api/kernels").kind == route_kind::kernels_list);
    CHECK(match_route("POST", "/api/kernels", false).kind == route_kind::kernel_create);
    CHECK(get("/api/kernels/" + id).kind == route_kind::kernel_get);
    CHECK(get("/api/kernels/" + id).kernel_id == id);
    CHECK(match_route("DELETE", "/api/kernels/" + id, false).kind == route_kind::kernel_delete);
    CHECK(match_route("POST", "/api/kernels/" + id + "/interrupt", false).kind ==
          route_kind::kernel_interrupt);
    CHECK(match_route("POST", "/api/kernels/" + id + "/restart", false).kind ==
          route_kind::kernel_restart);
    auto ch = get("/api/kernels/" + id + "/channels?session_id=abc&token=t");
    CHECK(ch.kind == route_kind::kernel_channels);
    CHECK(ch.kernel_id == id);
    CHECK(ch.query == "session_id=abc&token=t");
}

TEST_CASE("router serves the health and readiness probes, public, before static files") {
    CHECK(match_route("GET", "/healthz", true).kind == route_kind::healthz);
    CHECK(match_route("GET", "/readyz", true).kind == route_kind::readyz);
    CHECK(get("/readyz/").kind == route_kind::readyz);
    CHECK(match_route("POST", "/healthz", false).allow == "GET");
    CHECK(is_public_route(route_kind::healthz));
    CHECK(is_public_route(route_kind::readyz));
    CHECK(to_string(route_kind::readyz) == "readyz");
}

TEST_CASE("router serves the OpenAPI document at /openapi.json, public, before static files") {
    CHECK(get("/openapi.json").kind == route_kind::openapi_document);
    CHECK(match_route("GET", "/openapi.json", true).kind == route_kind::openapi_document);
    CHECK(match_route("POST", "/openapi.json", true).allow == "GET");
    CHECK(get("/openapi.json/x").kind == route_kind::not_found);
    CHECK(is_public_route(route_kind::openapi_document));
    CHECK(is_public_route(route_kind::api_info));
    CHECK_FALSE(is_public_route(route_kind::kernels_list));
    CHECK_FALSE(is_public_route(route_kind::context_create));
    CHECK(to_string(route_kind::file_put) == "file_put");
}

TEST_CASE("router answers method not allowed with the allowed methods") {
    auto r = match_route("PUT", "/api/kernels", false);
    CHECK(r.kind == route_kind::method_not_allowed);
    CHECK(r.allow == "GET, POST");
    CHECK(match_route("GET", "/api/kernels/" + id + "/restart", false).allow == "POST");
    CHECK(match_route("OPTIONS", "/api", false).kind == route_kind::method_not_allowed);
}

TEST_CASE("router matches HEAD as GET, but on the WebSocket routes") {
    CHECK(match_route("HEAD", "/healthz", false).kind == route_kind::healthz);
    CHECK(match_route("HEAD", "/readyz", true).kind == route_kind::readyz);
    CHECK(match_route("HEAD", "/api", false).kind == route_kind::api_info);
    CHECK(match_route("HEAD", "/api/kernels", false).kind == route_kind::kernels_list);
    CHECK(match_route("HEAD", "/", true).kind == route_kind::static_file);
    CHECK(match_route("HEAD", "/app.js", true).file == "app.js");
    CHECK(match_route("HEAD", "/", false).kind == route_kind::not_found);
    CHECK(match_route("HEAD", "/v1/contexts/abc/files/a.csv", false).kind == route_kind::file_get);
    auto channels = match_route("HEAD", "/api/kernels/" + id + "/channels", false);
    CHECK(channels.kind == route_kind::method_not_allowed);
    CHECK(channels.allow == "GET");
    CHECK(match_route("HEAD", "/v1/contexts/abc/events", false).allow == "GET");
    CHECK(match_route("POST", "/api/kernels/" + id + "/channels", false).allow == "GET");
    CHECK(match_route("POST", "/healthz", false).allow == "GET");
    CHECK(match_route("HEAD", "/mcp", false).allow == "POST, DELETE");
    CHECK(match_route("HEAD", "/api/kernels/" + id + "/restart", false).allow == "POST");
}

TEST_CASE("router refuses unknown and unsafe paths") {
    CHECK(get("").kind == route_kind::not_found);
    CHECK(get("api").kind == route_kind::not_found);
    CHECK(get("/api/nothing").kind == route_kind::not_found);
    CHECK(get("/api/kernels/" + id + "/nothing").kind == route_kind::not_found);
    CHECK(get("/kernelspecs/python3/../../etc/passwd").kind == route_kind::not_found);
    CHECK(get("/kernelspecs/python3/%2e%2e").kind == route_kind::not_found);
    CHECK(get("/kernelspecs/python3/a%2fb").kind == route_kind::not_found);
    CHECK(get("/kernelspecs/python3/a%00b").kind == route_kind::not_found);
    CHECK(get("/kernelspecs/python3/%zz").kind == route_kind::not_found);
    CHECK(get("/api//kernels").kind == route_kind::not_found);
    CHECK(get("/index.html").kind == route_kind::not_found);  // no web root
}

TEST_CASE("router serves static files only when a web root is configured") {
    auto r = match_route("GET", "/app/main.js?v=1", true);
    CHECK(r.kind == route_kind::static_file);
    CHECK(r.file == "app/main.js");
    CHECK(match_route("GET", "/", true).file.empty());
    CHECK(match_route("GET", "/../secret", true).kind == route_kind::not_found);
    CHECK(match_route("POST", "/x", true).kind == route_kind::not_found);
}

TEST_CASE("query_param decodes the value of the named key") {
    CHECK(query_param("session_id=1&token=a%20b", "token") == "a b");
    CHECK(query_param("token=a+b", "token") == "a b");
    CHECK(query_param("x=1", "token").empty());
    CHECK(query_param("", "token").empty());
    CHECK(query_param("token", "token").empty());
    CHECK(query_param("tok%zzen=1&token=2", "token") == "2");
}

TEST_CASE("kernel ids must be canonical lower-case UUIDs") {
    CHECK(is_valid_kernel_id(id));
    CHECK_FALSE(is_valid_kernel_id("0F1E2D3C-4B5A-4968-8776-655443322110"));
    CHECK_FALSE(is_valid_kernel_id("not-a-uuid"));
    CHECK_FALSE(is_valid_kernel_id(""));
    CHECK_FALSE(is_valid_kernel_id(id + "0"));
    CHECK_FALSE(is_valid_kernel_id("0f1e2d3c-4b5a-4968-8776_655443322110"));
}

TEST_CASE("router maps who-am-I and the admin overview, GET only, behind the token") {
    CHECK(get("/v1/whoami").kind == route_kind::whoami);
    CHECK(get("/v1/whoami/").kind == route_kind::whoami);
    CHECK(get("/v1/admin/overview").kind == route_kind::admin_overview);
    CHECK_FALSE(is_public_route(route_kind::whoami));
    CHECK_FALSE(is_public_route(route_kind::admin_overview));
    CHECK_FALSE(is_interpreter_route(route_kind::admin_overview));
    auto post = match_route("POST", "/v1/admin/overview", false);
    CHECK(post.kind == route_kind::method_not_allowed);
    CHECK(post.allow == "GET");
    CHECK(get("/v1/admin").kind == route_kind::not_found);
    CHECK(get("/v1/admin/kernels").kind == route_kind::not_found);
    CHECK(get("/v1/whoami/x").kind == route_kind::not_found);
}

TEST_CASE("router maps E2B's control plane behind the token and its data plane open") {
    auto m = [](const char* method, const char* target) {
        return match_route(method, target, true);
    };
    CHECK(m("POST", "/v2/sandboxes").kind == route_kind::e2b_sandboxes);
    CHECK(m("GET", "/v2/sandboxes?metadata=a%3Db").kind == route_kind::e2b_sandboxes);
    CHECK(m("GET", "/sandboxes").kind == route_kind::e2b_sandboxes);
    CHECK(m("POST", "/sandboxes").kind == route_kind::method_not_allowed);
    auto r = m("GET", "/sandboxes/abc123");
    CHECK(r.kind == route_kind::e2b_sandbox);
    CHECK(r.name == "abc123");
    CHECK(m("DELETE", "/sandboxes/abc123").kind == route_kind::e2b_sandbox);
    CHECK(m("POST", "/sandboxes/abc123/timeout").kind == route_kind::e2b_sandbox_timeout);
    CHECK(m("POST", "/v2/sandboxes/abc123/connect").kind == route_kind::e2b_sandbox_connect);
    CHECK(m("GET", "/v2/sandboxes/abc123/connect").allow == "POST");
    CHECK(match_route("GET", "/sandboxes/abc123/pause", false).kind == route_kind::not_found);
    for (auto k : {route_kind::e2b_sandboxes, route_kind::e2b_sandbox,
                   route_kind::e2b_sandbox_timeout, route_kind::e2b_sandbox_connect})
        CHECK_FALSE(is_public_route(k));

    CHECK(m("POST", "/execute").kind == route_kind::e2b_execute);
    CHECK(m("GET", "/execute").kind == route_kind::method_not_allowed);
    CHECK(m("GET", "/contexts").kind == route_kind::e2b_contexts);
    CHECK(m("POST", "/contexts").kind == route_kind::e2b_contexts);
    r = m("DELETE", "/contexts/c1");
    CHECK(r.kind == route_kind::e2b_context);
    CHECK(r.context_id == "c1");
    CHECK(m("POST", "/contexts/c1/restart").kind == route_kind::e2b_context_restart);
    // Before the web UI's files, even with a web root.
    CHECK(m("GET", "/files?path=/home/user/a.txt").kind == route_kind::e2b_files);
    CHECK(m("GET", "/health").kind == route_kind::e2b_health);
    r = m("POST", "/filesystem.Filesystem/Stat");
    CHECK(r.kind == route_kind::e2b_rpc);
    CHECK(r.name == "filesystem.Filesystem");
    CHECK(r.file == "Stat");
    CHECK(m("POST", "/process.Process/Start").kind == route_kind::e2b_rpc);
    CHECK(m("POST", "/other.Service/Start").kind == route_kind::not_found);
    for (auto k : {route_kind::e2b_execute, route_kind::e2b_contexts, route_kind::e2b_context,
                   route_kind::e2b_context_restart, route_kind::e2b_files, route_kind::e2b_health,
                   route_kind::e2b_rpc}) {
        CHECK(is_e2b_route(k));
        CHECK(is_public_route(k));
    }
    CHECK_FALSE(is_e2b_route(route_kind::mcp));
    // The web UI keeps the rest.
    CHECK(m("GET", "/index.html").kind == route_kind::static_file);
}
