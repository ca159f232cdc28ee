// Request lines to routes: any method and target, percent-decoding, query parameters. The
// router is built from a table of every shape a route takes (literals, parameters, a {rest...},
// several methods, a WebSocket, the fallback), as gateway/routes.cpp declares the server's.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>

#include "gateway/http/router.hpp"

namespace gw = callisto::gateway;

namespace {

gw::router make_router(bool fallback) {
    gw::router r;
    r.add({"api_info", "GET", "/api", gw::route_access::open});
    r.add({"kernels_list", "GET", "/api/kernels"});
    r.add({"kernel_create", "POST", "/api/kernels"});
    r.add({"kernel_get", "GET", "/api/kernels/{kernel_id}"});
    r.add({"kernel_delete", "DELETE", "/api/kernels/{kernel_id}"});
    r.add({"kernel_channels", "GET", "/api/kernels/{kernel_id}/channels", gw::route_access::token,
           gw::route_type::websocket});
    r.add({"resource", "GET", "/kernelspecs/{kernel_name}/{resource}"});
    r.add({"file_get", "GET", "/v1/contexts/{context_id}/files/{path...}"});
    r.add({"file_put", "PUT", "/v1/contexts/{context_id}/files/{path...}"});
    r.add({"mcp", "POST, DELETE", "/mcp"});
    r.add({"overview", "GET", "/v1/admin/overview", gw::route_access::admin});
    if (fallback)
        r.add(
            {"static_file", "GET", "/{path...}", gw::route_access::open, gw::route_type::fallback});
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const gw::router with = make_router(true);
    static const gw::router without = make_router(false);
    FuzzedDataProvider in(data, size);
    const std::string method = in.ConsumeRandomLengthString(16);
    const bool static_files = in.ConsumeBool();
    const std::string key = in.ConsumeRandomLengthString(16);
    const std::string target = in.ConsumeRemainingBytesAsString();
    auto r = (static_files ? with : without).match(method, target);
    (void)r.name();
    for (const auto& [name, value] : r.params) (void)r.param(name);
    (void)gw::query_param(target, key);
    std::string decoded;
    (void)gw::percent_decode(target, decoded, true);
    (void)gw::is_valid_kernel_id(target);
    return 0;
}
