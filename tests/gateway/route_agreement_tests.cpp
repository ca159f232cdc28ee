// The route table (gateway/routes.cpp) matches every request line as the route_kind router did:
// the same route name, path parameters, Allow and public routes, for every method on the
// documented paths and on the bad forms the router tests use. Goes with the route_kind router.

#include "gateway/routes.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

using namespace callisto::gateway;

namespace {

const std::string k = "0f1e2d3c-4b5a-4968-8776-655443322110";
const std::string c = "1a2b3c4d-0000-4000-8000-00000000abcd";
const std::string e = "9f8e7d6c-1111-4111-9111-111111111111";

std::vector<std::string> targets() {
    std::vector<std::string> out = {
        "/api",
        "/api/",
        "/api/kernelspecs",
        "/api/kernelspecs/",
        "/api/kernelspecs/python3",
        "/api/kernelspecs/python3/x",
        "/api/kernelspecs/py%20thon",
        "/kernelspecs/python3/logo-64x64.png",
        "/kernelspecs/python3",
        "/kernelspecs/python3/a/b",
        "/kernelspecs/python3/../../etc/passwd",
        "/kernelspecs/python3/%2e%2e",
        "/kernelspecs/python3/a%2fb",
        "/kernelspecs/python3/a%00b",
        "/kernelspecs/python3/%zz",
        "/api/kernels",
        "/api/kernels/",
        "/api/kernels?token=t",
        "/api/kernels/" + k,
        "/api/kernels/not-an-id",
        "/api/kernels/" + k + "/interrupt",
        "/api/kernels/" + k + "/restart",
        "/api/kernels/" + k + "/channels?session_id=abc&token=t",
        "/api/kernels/" + k + "/nothing",
        "/api/kernels/" + k + "/channels/x",
        "/api/kernels/..",
        "/api//kernels",
        "/api/nothing",
        "/api/kernel%73",
        "/openapi.json",
        "/openapi.json/x",
        "/healthz",
        "/healthz/",
        "/readyz",
        "/metrics",
        "/metrics/x",
        "/mcp",
        "/mcp/",
        "/mcp/x",
        "/v1",
        "/v1/",
        "/v1/languages",
        "/v1/languages/python",
        "/v1/whoami",
        "/v1/whoami/x",
        "/v1/admin",
        "/v1/admin/overview",
        "/v1/admin/kernels",
        "/v1/contexts",
        "/v1/contexts/?token=x",
        "/v1/contexts/" + c,
        "/v1/contexts/abc",
        "/v1/contexts/" + c + "/restart",
        "/v1/contexts/" + c + "/events",
        "/v1/contexts/" + c + "/executions",
        "/v1/contexts/" + c + "/executions/" + e,
        "/v1/contexts/" + c + "/executions/" + e + "/x",
        "/v1/contexts/" + c + "/files",
        "/v1/contexts/" + c + "/files/",
        "/v1/contexts/" + c + "/files/a.csv",
        "/v1/contexts/" + c + "/files/data/in%20put.csv?x=1",
        "/v1/contexts/" + c + "/files/a/b/c/d/e",
        "/v1/contexts/" + c + "/files/../../etc/passwd",
        "/v1/contexts/" + c + "/files/a%2Fb",
        "/v1/contexts/" + c + "/nothing",
        "/v1/contexts/" + c + "/restart/x",
        "/v1/contexts/" + c + "/a/b/c",
        "/v1/executions",
        "/v1/executions/",
        "/v1/executions/" + e,
        "/v1/executions/" + e + "/more",
        "/v1/executions/..",
        "/v1/nothing",
        "/v1//contexts",
        "/v1/%00",
        "/v1%2F..",
        "/",
        "/index.html",
        "/app/main.js?v=1",
        "/../secret",
        "/a//b",
        "//",
        "",
        "api",
        "*",
        "/%zz",
        "/apix",
        "/v1x/a",
    };
    return out;
}

// The old route's parameters, by the names the table's templates use.
std::vector<std::pair<std::string, std::string>> old_params(const route& r) {
    std::vector<std::pair<std::string, std::string>> out;
    if (!r.kernel_id.empty()) out.emplace_back("kernel_id", r.kernel_id);
    if (!r.context_id.empty()) out.emplace_back("context_id", r.context_id);
    if (!r.execution_id.empty()) out.emplace_back("execution_id", r.execution_id);
    if (!r.name.empty()) out.emplace_back("kernel_name", r.name);
    if (r.kind == route_kind::kernelspec_resource) out.emplace_back("resource", r.file);
    if (r.kind == route_kind::file_get || r.kind == route_kind::file_put ||
        r.kind == route_kind::file_delete || r.kind == route_kind::static_file)
        out.emplace_back("path", r.file);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("the route table matches every request line as the route_kind router did") {
    int compared = 0;
    for (bool web_ui : {false, true}) {
        server_config config;
        if (web_ui) config.web_root = "/srv/web";
        const router table = route_table_router(config);
        for (const auto& target : targets()) {
            for (std::string_view method :
                 {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND", ""}) {
                INFO(method << " " << target << (web_ui ? " (web UI)" : ""));
                const route old = match_route(method, target, web_ui);
                const route_match now = table.match(method, target);
                CHECK(now.name() == to_string(old.kind));
                CHECK(now.allow == old.allow);
                if (now.found()) {
                    CHECK(now.query == old.query);
                    auto params = now.params;
                    std::vector<std::pair<std::string, std::string>> named;
                    for (auto& [name, value] : params) named.emplace_back(name, value);
                    std::sort(named.begin(), named.end());
                    CHECK(named == old_params(old));
                    CHECK((now.spec.access == route_access::open) == is_public_route(old.kind));
                    CHECK((now.spec.access == route_access::admin) ==
                          (old.kind == route_kind::admin_overview ||
                           old.kind == route_kind::metrics));
                }
                ++compared;
            }
        }
    }
    CHECK(compared > 1500);
}

TEST_CASE("the table has a row for every route_kind but the outcomes, in the server's config") {
    server_config config;
    config.web_root = "/srv/web";
    const router table = route_table_router(config);
    std::vector<std::string_view> names;
    for (std::size_t i = 0; i < table.size(); ++i) names.push_back(table.spec(i).name);
    for (int i = 0; i < static_cast<int>(route_kind::route_kind_count); ++i) {
        const auto kind = static_cast<route_kind>(i);
        if (kind == route_kind::not_found || kind == route_kind::method_not_allowed ||
            kind == route_kind::bad_v1_path)
            continue;
        CHECK_MESSAGE(std::find(names.begin(), names.end(), to_string(kind)) != names.end(),
                      to_string(kind));
    }
    CHECK(names.size() == static_cast<std::size_t>(route_kind::route_kind_count) - 3);
    // --metrics-public opens GET /metrics, and only it.
    config.metrics_public = true;
    const router open_metrics = route_table_router(config);
    for (std::size_t i = 0; i < table.size(); ++i) {
        INFO(table.spec(i).name);
        const bool opened = table.spec(i).access != open_metrics.spec(i).access;
        CHECK(opened == (table.spec(i).name == "metrics"));
    }
    CHECK(open_metrics.match("GET", "/metrics").spec.access == route_access::open);
}
