// The router (gateway/http/router.hpp) on a small table of every shape a route takes, and the
// server's own table (gateway/routes.cpp) on every Kernel Gateway path and its bad forms.

#include "gateway/http/router.hpp"

#include <stdexcept>

#include <doctest/doctest.h>

#include "tests/gateway/route_table_matching.hpp"

using namespace callisto::gateway;

namespace {
const std::string id = "0f1e2d3c-4b5a-4968-8776-655443322110";
route_match get(std::string_view target) { return match_route("GET", target, false); }
}  // namespace

TEST_CASE("router maps every Kernel Gateway route") {
    CHECK(get("/api").name() == "api_info");
    CHECK(get("/api/").name() == "api_info");
    CHECK(get("/api/kernelspecs").name() == "kernelspecs_list");
    auto spec = get("/api/kernelspecs/python3");
    CHECK(spec.name() == "kernelspec_get");
    CHECK(spec.param("kernel_name") == "python3");
    auto res = get("/kernelspecs/python3/logo-64x64.png");
    CHECK(res.name() == "kernelspec_resource");
    CHECK(res.param("resource") == "logo-64x64.png");
    CHECK(get("/api/kernels").name() == "kernels_list");
    CHECK(match_route("POST", "/api/kernels", false).name() == "kernel_create");
    CHECK(get("/api/kernels/" + id).name() == "kernel_get");
    CHECK(get("/api/kernels/" + id).param("kernel_id") == id);
    CHECK(match_route("DELETE", "/api/kernels/" + id, false).name() == "kernel_delete");
    CHECK(match_route("POST", "/api/kernels/" + id + "/interrupt", false).name() ==
          "kernel_interrupt");
    CHECK(match_route("POST", "/api/kernels/" + id + "/restart", false).name() == "kernel_restart");
    auto ch = get("/api/kernels/" + id + "/channels?session_id=abc&token=t");
    CHECK(ch.name() == "kernel_channels");
    CHECK(ch.param("kernel_id") == id);
    CHECK(ch.query == "session_id=abc&token=t");
}

TEST_CASE("router serves the health and readiness probes, public, before static files") {
    CHECK(match_route("GET", "/healthz", true).name() == "healthz");
    CHECK(match_route("GET", "/readyz", true).name() == "readyz");
    CHECK(get("/readyz/").name() == "readyz");
    CHECK(match_route("POST", "/healthz", false).allow == "GET");
    CHECK(access_of("healthz") == route_access::open);
    CHECK(access_of("readyz") == route_access::open);
}

TEST_CASE("router serves the OpenAPI document at /openapi.json, public, before static files") {
    CHECK(get("/openapi.json").name() == "openapi_document");
    CHECK(match_route("GET", "/openapi.json", true).name() == "openapi_document");
    CHECK(match_route("POST", "/openapi.json", true).allow == "GET");
    CHECK(get("/openapi.json/x").name() == "not_found");
    CHECK(access_of("openapi_document") == route_access::open);
    CHECK(access_of("api_info") == route_access::open);
    CHECK(access_of("kernels_list") != route_access::open);
    CHECK(access_of("context_create") != route_access::open);
}

TEST_CASE("router answers method not allowed with the allowed methods") {
    auto r = match_route("PUT", "/api/kernels", false);
    CHECK(r.name() == "method_not_allowed");
    CHECK(r.allow == "GET, POST");
    CHECK(match_route("GET", "/api/kernels/" + id + "/restart", false).allow == "POST");
    CHECK(match_route("OPTIONS", "/api", false).name() == "method_not_allowed");
}

TEST_CASE("router matches HEAD as GET, but on the WebSocket routes") {
    CHECK(match_route("HEAD", "/healthz", false).name() == "healthz");
    CHECK(match_route("HEAD", "/readyz", true).name() == "readyz");
    CHECK(match_route("HEAD", "/api", false).name() == "api_info");
    CHECK(match_route("HEAD", "/api/kernels", false).name() == "kernels_list");
    CHECK(match_route("HEAD", "/", true).name() == "static_file");
    CHECK(match_route("HEAD", "/app.js", true).param("path") == "app.js");
    CHECK(match_route("HEAD", "/", false).name() == "not_found");
    CHECK(match_route("HEAD", "/v1/contexts/abc/files/a.csv", false).name() == "file_get");
    auto channels = match_route("HEAD", "/api/kernels/" + id + "/channels", false);
    CHECK(channels.name() == "method_not_allowed");
    CHECK(channels.allow == "GET");
    CHECK(match_route("HEAD", "/v1/contexts/abc/events", false).allow == "GET");
    CHECK(match_route("POST", "/api/kernels/" + id + "/channels", false).allow == "GET");
    CHECK(match_route("POST", "/healthz", false).allow == "GET");
    CHECK(match_route("HEAD", "/mcp", false).allow == "POST, DELETE");
    CHECK(match_route("HEAD", "/api/kernels/" + id + "/restart", false).allow == "POST");
}

TEST_CASE("router refuses unknown and unsafe paths") {
    CHECK(get("").name() == "not_found");
    CHECK(get("api").name() == "not_found");
    CHECK(get("/api/nothing").name() == "not_found");
    CHECK(get("/api/kernels/" + id + "/nothing").name() == "not_found");
    CHECK(get("/kernelspecs/python3/../../etc/passwd").name() == "not_found");
    CHECK(get("/kernelspecs/python3/%2e%2e").name() == "not_found");
    CHECK(get("/kernelspecs/python3/a%2fb").name() == "not_found");
    CHECK(get("/kernelspecs/python3/a%00b").name() == "not_found");
    CHECK(get("/kernelspecs/python3/%zz").name() == "not_found");
    CHECK(get("/api//kernels").name() == "not_found");
    CHECK(get("/index.html").name() == "not_found");  // no web root
}

TEST_CASE("router serves static files only when a web root is configured") {
    auto r = match_route("GET", "/app/main.js?v=1", true);
    CHECK(r.name() == "static_file");
    CHECK(r.param("path") == "app/main.js");
    CHECK(match_route("GET", "/", true).param("path").empty());
    CHECK(match_route("GET", "/../secret", true).name() == "not_found");
    CHECK(match_route("POST", "/x", true).name() == "not_found");
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
    CHECK(get("/v1/whoami").name() == "whoami");
    CHECK(get("/v1/whoami/").name() == "whoami");
    CHECK(get("/v1/admin/overview").name() == "admin_overview");
    CHECK(access_of("whoami") != route_access::open);
    CHECK(access_of("admin_overview") != route_access::open);
    CHECK(access_of("admin_overview") == route_access::admin);
    CHECK(access_of("whoami") == route_access::token);
    auto post = match_route("POST", "/v1/admin/overview", false);
    CHECK(post.name() == "method_not_allowed");
    CHECK(post.allow == "GET");
    CHECK(get("/v1/admin").name() == "not_found");
    CHECK(get("/v1/admin/kernels").name() == "not_found");
    CHECK(get("/v1/whoami/x").name() == "not_found");
}

// ---- router: routes declared as (name, methods, path template, access) ------------------------

namespace {

// A small table with every shape a template takes: literals, parameters, a {rest...}, two
// routes on one path, a WebSocket, the web UI's fallback.
router small_table(bool with_fallback) {
    router r;
    r.add({"items_list", "GET", "/api/items"});
    r.add({"item_create", "POST", "/api/items"});
    r.add({"item_get", "GET", "/api/items/{item_id}"});
    r.add({"item_delete", "DELETE", "/api/items/{item_id}"});
    r.add({"item_watch", "GET", "/api/items/{item_id}/watch", route_access::token,
           route_type::websocket});
    r.add({"blob_get", "GET", "/v1/boxes/{box_id}/blobs/{path...}"});
    r.add({"blob_put", "PUT", "/v1/boxes/{box_id}/blobs/{path...}"});
    r.add({"rpc", "POST, DELETE", "/rpc"});
    r.add({"health", "GET", "/health", route_access::open});
    if (with_fallback)
        r.add({"page", "GET", "/{file...}", route_access::open, route_type::fallback});
    return r;
}

}  // namespace

TEST_CASE("a router matches literal segments and extracts named parameters, decoded") {
    const auto r = small_table(false);
    auto m = r.match("GET", "/api/items/a%20b?x=1&token=t");
    REQUIRE(m.found());
    CHECK(m.name() == "item_get");
    CHECK(m.spec.path == "/api/items/{item_id}");
    CHECK(m.param("item_id") == "a b");
    CHECK(m.query == "x=1&token=t");
    CHECK(r.spec(m.index).name == "item_get");
    CHECK(r.match("GET", "/api/items").name() == "items_list");
    CHECK(r.match("GET", "/api/items/").name() == "items_list");  // a trailing slash
    CHECK(r.match("POST", "/api/items").name() == "item_create");
    CHECK(r.match("DELETE", "/api/items/x").name() == "item_delete");
    CHECK(r.match("GET", "/api/item%73").name() == "items_list");  // decoded, then compared
    CHECK(r.match("GET", "/api/items/x/y").name() == "not_found");
    CHECK(r.match("GET", "/api").name() == "not_found");
    CHECK(r.match("GET", "/api/items/x/watch").param("item_id") == "x");
}

TEST_CASE("a {name...} parameter takes one or more segments, joined with '/'") {
    const auto r = small_table(false);
    auto m = r.match("GET", "/v1/boxes/b1/blobs/a/b%20c/d.csv");
    REQUIRE(m.found());
    CHECK(m.param("box_id") == "b1");
    CHECK(m.param("path") == "a/b c/d.csv");
    CHECK(r.match("PUT", "/v1/boxes/b1/blobs/x").param("path") == "x");
    CHECK(r.match("GET", "/v1/boxes/b1/blobs").name() == "not_found");
    CHECK(r.match("GET", "/v1/boxes/b1/blobs/").name() == "not_found");
}

TEST_CASE("asking a match for a parameter its route has not is a programmer's error") {
    const auto r = small_table(false);
    CHECK_THROWS_AS((void)r.match("GET", "/api/items/x").param("box_id"), std::logic_error);
    CHECK_THROWS_AS((void)r.match("GET", "/nothing").param("item_id"), std::logic_error);
}

TEST_CASE("a wrong method is 405 with every method the path's routes declare, in order") {
    const auto r = small_table(true);
    auto m = r.match("PATCH", "/api/items/x");
    CHECK(m.result == route_match::outcome::method_not_allowed);
    CHECK(m.name() == "method_not_allowed");
    CHECK(m.allow == "GET, DELETE");
    CHECK(r.match("PUT", "/api/items").allow == "GET, POST");
    CHECK(r.match("POST", "/v1/boxes/b/blobs/a/b").allow == "GET, PUT");
    CHECK(r.match("GET", "/rpc").allow == "POST, DELETE");
    CHECK(r.match("DELETE", "/rpc").name() == "rpc");
    CHECK(r.match("OPTIONS", "/health").allow == "GET");
    // An unknown method is no different.
    CHECK(r.match("BREW", "/api/items").allow == "GET, POST");
    CHECK(r.match("", "/api/items").allow == "GET, POST");
}

TEST_CASE("a router matches HEAD as GET, but on WebSocket routes") {
    const auto r = small_table(true);
    CHECK(r.match("HEAD", "/api/items/x").name() == "item_get");
    CHECK(r.match("HEAD", "/v1/boxes/b/blobs/f").name() == "blob_get");
    CHECK(r.match("HEAD", "/").name() == "page");
    auto watch = r.match("HEAD", "/api/items/x/watch");
    CHECK(watch.result == route_match::outcome::method_not_allowed);
    CHECK(watch.allow == "GET");
    CHECK(r.match("HEAD", "/rpc").allow == "POST, DELETE");
}

TEST_CASE("the fallback takes GET for every path no route has, but under /api and /v1") {
    const auto with = small_table(true);
    auto root = with.match("GET", "/");
    REQUIRE(root.found());
    CHECK(root.name() == "page");
    CHECK(root.param("file").empty());
    CHECK(with.match("GET", "/app/main.js?v=2").param("file") == "app/main.js");
    CHECK(with.match("GET", "/health/x").param("file") == "health/x");
    CHECK(with.match("GET", "/rpc/x").name() == "page");
    // Never under an API's prefix, never 405, never past a route with other methods.
    CHECK(with.match("GET", "/api/nothing").name() == "not_found");
    CHECK(with.match("GET", "/v1/nothing").name() == "not_found");
    CHECK(with.match("GET", "/api").name() == "not_found");
    CHECK(with.match("POST", "/x").name() == "not_found");
    CHECK(with.match("GET", "/rpc").allow == "POST, DELETE");
    CHECK(with.match("GET", "/../secret").name() == "not_found");
    const auto without = small_table(false);
    CHECK(without.match("GET", "/").name() == "not_found");
    CHECK(without.match("GET", "/index.html").name() == "not_found");
}

TEST_CASE("a router matches no unsafe path; under /v1/ it says so") {
    const auto r = small_table(true);
    for (std::string_view t :
         {"/api/items/..", "/api/items/%2e%2e", "/api/items/a%2fb", "/api/items/a%00b",
          "/api/items/%zz", "/api//items", "/a/./b", "", "api/items", "*"}) {
        INFO(t);
        CHECK(r.match("GET", t).result == route_match::outcome::not_found);
    }
    for (std::string_view t : {"/v1/boxes/b/blobs/../../etc/passwd", "/v1/boxes/%2F/blobs/a",
                               "/v1/boxes/b/blobs/a%00", "/v1//boxes", "/v1/boxes/b/blobs/%4"}) {
        INFO(t);
        auto m = r.match("GET", t);
        CHECK(m.result == route_match::outcome::bad_path);
        CHECK(m.name() == "bad_v1_path");
    }
}

TEST_CASE("a malformed route is refused when it is added") {
    auto refused = [](route_spec spec) {
        router r;
        r.add({"page", "GET", "/{file...}", route_access::open, route_type::fallback});
        r.add({"taken", "GET", "/taken"});
        try {
            r.add(spec);
        } catch (const std::invalid_argument&) {
            return true;
        }
        return false;
    };
    CHECK(refused({"", "GET", "/a"}));
    CHECK(refused({"taken", "GET", "/b"}));
    CHECK(refused({"x", "", "/a"}));
    CHECK(refused({"x", "get", "/a"}));
    CHECK(refused({"x", "GET,,POST", "/a"}));
    CHECK(refused({"x", "GET, GET", "/a"}));
    CHECK(refused({"x", "HEAD", "/a"}));
    CHECK(refused({"x", "GET", ""}));
    CHECK(refused({"x", "GET", "a"}));
    CHECK(refused({"x", "GET", "/a/"}));
    CHECK(refused({"x", "GET", "/a//b"}));
    CHECK(refused({"x", "GET", "/a/{}"}));
    CHECK(refused({"x", "GET", "/a/{b"}));
    CHECK(refused({"x", "GET", "/a/{B}"}));
    CHECK(refused({"x", "GET", "/a/{b}/{b}"}));
    CHECK(refused({"x", "GET", "/a/{b...}/c"}));
    CHECK(refused({"x", "GET", "/a/{...}"}));
    CHECK(refused({"x", "GET", "/a/x{b}"}));
    CHECK(refused({"x", "GET", "/a/%41"}));
    CHECK(refused({"x", "GET", "/a/.."}));
    CHECK(refused(
        {"x", "GET", "/{f...}", route_access::open, route_type::fallback}));  // a second one
    router one;
    CHECK_THROWS_AS(
        one.add({"f", "GET", "/files/{f...}", route_access::open, route_type::fallback}),
        std::invalid_argument);
    CHECK_FALSE(refused({"x", "GET, POST", "/a/{b}/c/{d...}"}));
    CHECK_FALSE(refused({"x", "POST,DELETE", "/a/{b_2}"}));
}

TEST_CASE("router maps E2B's control plane behind the token and its data plane to its own") {
    auto m = [](const char* method, const char* target) {
        return match_route(method, target, true);
    };
    CHECK(m("POST", "/v2/sandboxes").name() == "e2b_sandbox_create");
    auto list = m("GET", "/v2/sandboxes?metadata=a%3Db");
    CHECK(list.name() == "e2b_sandboxes_list");
    CHECK(query_param(list.query, "metadata") == "a=b");
    CHECK(m("GET", "/sandboxes").name() == "e2b_sandboxes_list_v1");
    auto post = m("POST", "/sandboxes");
    CHECK(post.name() == "method_not_allowed");
    CHECK(post.allow == "GET");
    CHECK(m("PUT", "/v2/sandboxes").allow == "GET, POST");
    auto r = m("GET", "/sandboxes/abc123");
    CHECK(r.name() == "e2b_sandbox_get");
    CHECK(r.param("sandbox_id") == "abc123");
    CHECK(m("DELETE", "/sandboxes/abc123").name() == "e2b_sandbox_kill");
    CHECK(m("PUT", "/sandboxes/abc123").allow == "GET, DELETE");
    CHECK(m("POST", "/sandboxes/abc123/timeout").name() == "e2b_sandbox_timeout");
    CHECK(m("POST", "/v2/sandboxes/abc123/connect").param("sandbox_id") == "abc123");
    CHECK(m("POST", "/v2/sandboxes/abc123/connect").name() == "e2b_sandbox_connect");
    CHECK(m("GET", "/v2/sandboxes/abc123/connect").allow == "POST");
    CHECK(match_route("GET", "/v2/sandboxes/abc123", false).name() == "not_found");
    CHECK(match_route("GET", "/sandboxes/abc123/pause", false).name() == "not_found");
    for (auto name :
         {"e2b_sandboxes_list", "e2b_sandbox_create", "e2b_sandboxes_list_v1", "e2b_sandbox_get",
          "e2b_sandbox_kill", "e2b_sandbox_timeout", "e2b_sandbox_connect"})
        CHECK(access_of(name) == route_access::token);

    CHECK(m("POST", "/execute").name() == "e2b_execute");
    CHECK(m("GET", "/execute").allow == "POST");
    CHECK(m("GET", "/contexts").name() == "e2b_contexts_list");
    CHECK(m("POST", "/contexts").name() == "e2b_context_create");
    r = m("DELETE", "/contexts/c1");
    CHECK(r.name() == "e2b_context_delete");
    CHECK(r.param("context_id") == "c1");
    CHECK(m("GET", "/contexts/c1").allow == "DELETE");
    CHECK(m("POST", "/contexts/c1/restart").param("context_id") == "c1");
    CHECK(m("POST", "/contexts/c1/restart").name() == "e2b_context_restart");
    // Before the web UI's files, even with a web root.
    CHECK(m("GET", "/files?path=/home/user/a.txt").name() == "e2b_file_read");
    CHECK(m("POST", "/files?path=/home/user/a.txt").name() == "e2b_file_write");
    CHECK(m("GET", "/health").name() == "e2b_health");
    r = m("POST", "/filesystem.Filesystem/Stat");
    CHECK(r.name() == "e2b_filesystem_rpc");
    CHECK(r.param("method") == "Stat");
    CHECK(m("POST", "/process.Process/Start").name() == "e2b_process_rpc");
    CHECK(m("POST", "/other.Service/Start").name() == "not_found");
    CHECK(m("POST", "/process.Process/Start/more").name() == "not_found");
    // The sandbox's access token is the handler's to check: no user's token asked.
    for (auto name : {"e2b_execute", "e2b_contexts_list", "e2b_context_create",
                      "e2b_context_delete", "e2b_context_restart", "e2b_file_read",
                      "e2b_file_write", "e2b_filesystem_rpc", "e2b_process_rpc"})
        CHECK(access_of(name) == route_access::own_token);
    // Health refuses no one: 502 for a sandbox not named with its token.
    CHECK(access_of("e2b_health") == route_access::open);
    // Every E2B row declares E2B's errors, and no other row does.
    for (const auto& row : route_table())
        CHECK_MESSAGE(
            (row.extras.errors == route_errors::e2b) == (row.spec.name.substr(0, 4) == "e2b_"),
            row.spec.name);
    // The web UI keeps the rest.
    CHECK(m("GET", "/index.html").name() == "static_file");
}
