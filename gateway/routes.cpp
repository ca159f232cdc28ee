#include "gateway/routes.hpp"

#include <charconv>
#include <optional>
#include <type_traits>

#include <boost/asio/dispatch.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "gateway/http/beast.hpp"
#include "gateway/http/content_headers.hpp"
#include "gateway/http/json_response.hpp"
#include "gateway/http/ndjson_stream.hpp"
#include "gateway/http/openapi_document.hpp"
#include "gateway/http/static_files.hpp"
#include "gateway/interpreter/api/events_session.hpp"
#include "gateway/jupyter_api/websocket_session.hpp"

namespace callisto::gateway {
namespace {

using e2b::e2b_api;
using interpreter::interpreter_api;
using jupyter_api::kernels_api;
using jupyter_api::kernelspec_api;

// ---- handlers: an API's method, or a few lines here ------------------------------------------

// The API object a method belongs to.
template <class api>
api& api_in(gateway_services& s) {
    if constexpr (std::is_same_v<api, interpreter_api>) return s.interpreter_rest;
    if constexpr (std::is_same_v<api, kernels_api>) return s.kernels_rest;
    if constexpr (std::is_same_v<api, kernelspec_api>) return s.kernelspecs_rest;
    if constexpr (std::is_same_v<api, e2b_api>) return s.e2b;
}

template <class method>
struct api_of;
template <class api, class result, class... args>
struct api_of<result (api::*)(args...)> {
    using type = api;
};
template <class api, class result, class... args>
struct api_of<result (api::*)(args...) const> {
    using type = api;
};

// A route answered by one method of an API: `call<&kernels_api::get>`.
template <auto method>
void call(gateway_services& s, incoming_request in) {
    (api_in<typename api_of<decltype(method)>::type>(s).*method)(std::move(in));
}

// The routes whose answer may be a stream of NDJSON lines (/v1's with Accept:
// application/x-ndjson, E2B's /execute): the stream takes the connection over, which then
// closes after it.
template <auto method>
void streamed(gateway_services& s, incoming_request in) {
    using api = typename api_of<decltype(method)>::type;
    // E2B's data plane has no user (the sandbox's token is its credential): its streams are
    // listed as the facade's.
    constexpr bool e2b = std::is_same_v<api, e2b_api>;
    auto take_stream = [&s, take = in.take_connection, name = e2b ? "e2b" : in.who->name] {
        auto taken = take();
        auto stream =
            std::make_shared<ndjson_stream>(std::move(taken.stream), std::move(taken.slot));
        s.sessions.add(stream, e2b ? "e2b_execution_stream" : "execution_stream", name);
        return stream;
    };
    (api_in<api>(s).*method)(std::move(in), take_stream);
}

http_response websocket_only() {
    return error_response(http::status::bad_request,
                          "this endpoint speaks WebSocket only (Upgrade: websocket)");
}

// GET /api/kernels/{kernel_id}/channels: a Jupyter client attaches to a kernel.
void kernel_channels(gateway_services& s, incoming_request in) {
    if (!beast::websocket::is_upgrade(in.req)) return in.respond(websocket_only());
    // Only the owner, or an admin attaching to debug, reaches a kernel's channels.
    const user& who = *in.who;
    const std::string& id = in.where.param("kernel_id");
    auto kernel = is_valid_kernel_id(id) ? s.kernels.find_for(id, who) : nullptr;
    if (!kernel) return in.respond(s.kernels_rest.no_such_kernel(id, who));
    jupyter_api::websocket_session::url_options from_url;
    if (auto text = query_param(in.where.query, "since"); !text.empty()) {
        std::uint64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size())
            return in.respond(error_response(http::status::bad_request,
                                             "'since' must be a message sequence number"));
        from_url.since = value;
    }
    // jupyter_server and @jupyterlab/services name the client's session; only a bounded
    // one is kept (it only ever matches a session sent in message headers).
    if (auto session = query_param(in.where.query, "session_id"); session.size() <= 256)
        from_url.session_id = std::string(session);
    auto taken = in.take_connection();
    auto ws = std::make_shared<jupyter_api::websocket_session>(
        std::move(taken.stream), std::move(kernel), who.name, s.config, s.log, std::move(from_url),
        &s.host, std::move(taken.slot));
    s.sessions.add(ws, "kernel_websocket", who.name);
    ws->run(std::move(in.req));
}

// The events WebSocket of a paused context: the connection is taken now (on its strand, as it
// must be), the context resumed, and then the socket accepted on it, or the resume's error
// answered there.
void paused_context_events(gateway_services& s, incoming_request in) {
    if (!beast::websocket::is_upgrade(in.req)) return in.respond(websocket_only());
    const std::string id = in.where.param("context_id");
    const user who = *in.who;
    auto taken = std::make_shared<taken_connection>(in.take_connection());
    auto upgrade = std::make_shared<http_request>(std::move(in.req));
    s.interpreter_rest.resume(
        id, who, [&s, id, who, taken, upgrade](const interpreter::paused_table::outcome& how) {
            auto executor = taken->stream.get_executor();
            boost::asio::dispatch(executor, [&s, id, who, taken, upgrade, how] {
                auto context = how.status == 0 ? s.interpreter_rest.find_context(id, who) : nullptr;
                if (!context) {
                    auto stream = std::make_shared<ndjson_stream>(std::move(taken->stream),
                                                                  std::move(taken->slot));
                    return stream->respond(how.status == 0
                                               ? error_response(http::status::not_found,
                                                                "Context does not exist: " + id)
                                               : interpreter_api::resume_failure(how));
                }
                auto ws = std::make_shared<interpreter::events_session>(
                    std::move(taken->stream), std::move(context), s.interpreter_rest.settings(),
                    s.config, s.log, &s.host, std::move(taken->slot));
                s.sessions.add(ws, "events_websocket", who.name);
                ws->run(std::move(*upgrade));
            });
        });
}

// GET /v1/contexts/{context_id}/events: a context's executions as they happen.
void context_events(gateway_services& s, incoming_request in) {
    // The owner check first, as for the REST routes: others learn nothing, not even that it
    // speaks WebSocket.
    const std::string& id = in.where.param("context_id");
    if (s.interpreter_rest.is_paused(id, *in.who)) return paused_context_events(s, std::move(in));
    auto context = s.interpreter_rest.find_context(id, *in.who);
    if (!context)
        return in.respond(error_response(http::status::not_found, "Context does not exist: " + id));
    if (!beast::websocket::is_upgrade(in.req)) return in.respond(websocket_only());
    auto taken = in.take_connection();
    auto ws = std::make_shared<interpreter::events_session>(
        std::move(taken.stream), std::move(context), s.interpreter_rest.settings(), s.config, s.log,
        &s.host, std::move(taken.slot));
    s.sessions.add(ws, "events_websocket", in.who->name);
    ws->run(std::move(in.req));
}

void api_info(gateway_services&, incoming_request in) {
    in.respond(
        json_response(http::status::ok, {{"version", CALLISTO_VERSION}, {"gateway", "callisto"}}));
}

void openapi(gateway_services&, incoming_request in) {
    http_response res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-cache");
    res.body() = std::string(openapi_document());
    res.prepare_payload();
    in.respond(std::move(res));
}

void healthz(gateway_services&, incoming_request in) {
    in.respond(json_response(http::status::ok, {{"status", "ok"}}));
}

void readyz(gateway_services& s, incoming_request in) {
    auto report = s.ready.check();
    in.respond(json_response(report.ready ? http::status::ok : http::status::service_unavailable,
                             report.body));
}

void metrics_text(gateway_services& s, incoming_request in) {
    http_response res{http::status::ok, 11};
    res.set(http::field::content_type, metrics::registry::content_type);
    res.set(http::field::cache_control, "no-store");
    res.body() = s.metrics.render();
    res.prepare_payload();
    in.respond(std::move(res));
}

void whoami(gateway_services& s, incoming_request in) { in.respond(s.admin_rest.whoami(*in.who)); }

void admin_overview(gateway_services& s, incoming_request in) {
    in.respond(s.admin_rest.overview());
}

void mcp_message(gateway_services& s, incoming_request in) {
    s.mcp.handle(in.req, *in.who, std::move(in.respond));
}

void static_file(gateway_services& s, incoming_request in) {
    const std::string& file = in.where.param("path");
    auto res = serve_file(s.config.web_root, file.empty() ? "index.html" : file);
    set_web_ui_headers(res);
    in.respond(std::move(res));
}

// ---- what sets a route apart ------------------------------------------------------------------

route_body_limit upload_limit(const gateway_services& s) {
    return {s.interpreter_rest.max_upload_bytes(), "set by --upload-limit"};
}

route_body_limit mcp_limit(const gateway_services& s) {
    return {s.mcp.max_body_bytes(),
            "which leaves room for upload_file's content in base64: a file of up to "
            "--upload-limit, at most 16MiB"};
}

bool has_web_root(const server_config& c) { return !c.web_root.empty(); }
bool metrics_public(const server_config& c) { return c.metrics_public; }

constexpr auto open = route_access::open;
constexpr auto token = route_access::token;
constexpr auto admin = route_access::admin;
constexpr auto own_token = route_access::own_token;
// E2B's routes: their handlers' errors are E2B's.
constexpr route_extras e2b_errors = {.errors = route_errors::e2b};
constexpr auto websocket = route_type::websocket;
constexpr auto fallback = route_type::fallback;

// ---- the table ------------------------------------------------------------------------------

// One row a route: {name, methods, path, access (default: token), type}, its handler, and what
// sets it apart. Matched in this order; a path's Allow lists its routes' methods in this order.
// The path parameters are docs/openapi.json's (tests/gateway/openapi_tests.cpp).
const route_row table[] = {
    // The Kernel Gateway API, as jupyter_server serves it (gateway/jupyter_api/).
    {{"api_info", "GET", "/api", open}, api_info},
    {{"kernelspecs_list", "GET", "/api/kernelspecs"}, call<&kernelspec_api::list>},
    {{"kernelspec_get", "GET", "/api/kernelspecs/{kernel_name}"}, call<&kernelspec_api::get>},
    {{"kernelspec_resource", "GET", "/kernelspecs/{kernel_name}/{resource}"},
     call<&kernelspec_api::resource>},
    {{"kernels_list", "GET", "/api/kernels"}, call<&kernels_api::list>},
    {{"kernel_create", "POST", "/api/kernels"}, call<&kernels_api::create>, {.sheds_load = true}},
    {{"kernel_get", "GET", "/api/kernels/{kernel_id}"}, call<&kernels_api::get>},
    {{"kernel_delete", "DELETE", "/api/kernels/{kernel_id}"}, call<&kernels_api::remove>},
    {{"kernel_interrupt", "POST", "/api/kernels/{kernel_id}/interrupt"},
     call<&kernels_api::interrupt>},
    {{"kernel_restart", "POST", "/api/kernels/{kernel_id}/restart"}, call<&kernels_api::restart>},
    {{"kernel_channels", "GET", "/api/kernels/{kernel_id}/channels", token, websocket},
     kernel_channels},

    // Callisto's own API for agents and chat frontends (gateway/interpreter/).
    {{"languages_list", "GET", "/v1/languages"}, call<&interpreter_api::list_languages>},
    {{"contexts_list", "GET", "/v1/contexts"}, call<&interpreter_api::list_contexts>},
    {{"context_create", "POST", "/v1/contexts"},
     call<&interpreter_api::create_context>,
     {.sheds_load = true}},
    {{"context_get", "GET", "/v1/contexts/{context_id}"}, call<&interpreter_api::get_context>},
    {{"context_delete", "DELETE", "/v1/contexts/{context_id}"},
     call<&interpreter_api::delete_context>},
    {{"context_restart", "POST", "/v1/contexts/{context_id}/restart"},
     call<&interpreter_api::restart_context>},
    {{"context_events", "GET", "/v1/contexts/{context_id}/events", token, websocket},
     context_events},
    {{"executions_list", "GET", "/v1/contexts/{context_id}/executions"},
     call<&interpreter_api::list_executions>},
    {{"execution_create", "POST", "/v1/contexts/{context_id}/executions"},
     streamed<&interpreter_api::create_execution>},
    {{"execution_get", "GET", "/v1/contexts/{context_id}/executions/{execution_id}"},
     call<&interpreter_api::get_execution>},
    {{"execution_delete", "DELETE", "/v1/contexts/{context_id}/executions/{execution_id}"},
     call<&interpreter_api::interrupt_execution>},
    {{"files_list", "GET", "/v1/contexts/{context_id}/files"}, call<&interpreter_api::list_files>},
    {{"files_upload", "POST", "/v1/contexts/{context_id}/files"},
     call<&interpreter_api::upload_files>,
     {.body = upload_limit}},
    {{"file_get", "GET", "/v1/contexts/{context_id}/files/{path...}"},
     call<&interpreter_api::download_file>},
    {{"file_put", "PUT", "/v1/contexts/{context_id}/files/{path...}"},
     call<&interpreter_api::put_file>,
     {.body = upload_limit}},
    {{"file_delete", "DELETE", "/v1/contexts/{context_id}/files/{path...}"},
     call<&interpreter_api::delete_file>},
    {{"snapshot_create", "POST", "/v1/contexts/{context_id}/snapshots"},
     call<&interpreter_api::create_snapshot>},
    {{"context_pause", "POST", "/v1/contexts/{context_id}/pause"},
     call<&interpreter_api::pause_context>},
    {{"context_resume", "POST", "/v1/contexts/{context_id}/resume"},
     call<&interpreter_api::resume_context>,
     {.sheds_load = true}},
    {{"context_fork", "POST", "/v1/contexts/{context_id}/fork"},
     call<&interpreter_api::fork_context>,
     {.sheds_load = true}},
    {{"snapshots_list", "GET", "/v1/snapshots"}, call<&interpreter_api::list_snapshots>},
    {{"snapshot_get", "GET", "/v1/snapshots/{snapshot_id}"}, call<&interpreter_api::get_snapshot>},
    {{"snapshot_delete", "DELETE", "/v1/snapshots/{snapshot_id}"},
     call<&interpreter_api::delete_snapshot>},
    {{"oneshot_create", "POST", "/v1/executions"},
     streamed<&interpreter_api::create_oneshot>,
     {.sheds_load = true}},
    {{"oneshot_get", "GET", "/v1/executions/{execution_id}"}, call<&interpreter_api::get_oneshot>},
    {{"oneshot_delete", "DELETE", "/v1/executions/{execution_id}"},
     call<&interpreter_api::interrupt_oneshot>},
    {{"whoami", "GET", "/v1/whoami"}, whoami},
    {{"admin_overview", "GET", "/v1/admin/overview", admin}, admin_overview},

    // MCP (gateway/mcp/): hosts send bearer tokens and expect a JSON-RPC error with the 401;
    // a body carries upload_file's content in base64.
    {{"mcp", "POST, DELETE", "/mcp"},
     mcp_message,
     {.body = mcp_limit, .unauthorized = mcp::mcp_endpoint::unauthorized}},

    // For operators: the API's description, probes for load balancers, Prometheus.
    {{"openapi_document", "GET", "/openapi.json", open}, openapi},
    {{"healthz", "GET", "/healthz", open}, healthz},
    {{"readyz", "GET", "/readyz", open}, readyz},
    {{"metrics", "GET", "/metrics", admin}, metrics_text, {.open_when = metrics_public}},

    // The E2B-compatible facade (gateway/e2b/), E2B's API rather than Callisto's: its errors
    // are E2B's {"code", "message"}, which its SDKs read. The control plane takes the user's
    // token (E2B's SDKs send it as X-API-KEY, which the HTTP session reads as one); the data
    // plane, which the SDK sends to the one URL E2B_SANDBOX_URL names, the sandbox's own.
    {{"e2b_sandboxes_list", "GET", "/v2/sandboxes"}, call<&e2b_api::list_sandboxes>, e2b_errors},
    {{"e2b_sandbox_create", "POST", "/v2/sandboxes"},
     call<&e2b_api::create_sandbox>,
     {.sheds_load = true, .errors = route_errors::e2b}},
    {{"e2b_sandboxes_list_v1", "GET", "/sandboxes"}, call<&e2b_api::list_sandboxes>, e2b_errors},
    {{"e2b_sandbox_get", "GET", "/sandboxes/{sandbox_id}"},
     call<&e2b_api::get_sandbox>,
     e2b_errors},
    {{"e2b_sandbox_kill", "DELETE", "/sandboxes/{sandbox_id}"},
     call<&e2b_api::kill_sandbox>,
     e2b_errors},
    {{"e2b_sandbox_timeout", "POST", "/sandboxes/{sandbox_id}/timeout"},
     call<&e2b_api::set_timeout>,
     e2b_errors},
    {{"e2b_sandbox_connect", "POST", "/v2/sandboxes/{sandbox_id}/connect"},
     call<&e2b_api::connect>,
     e2b_errors},
    {{"e2b_execute", "POST", "/execute", own_token}, streamed<&e2b_api::execute>, e2b_errors},
    {{"e2b_contexts_list", "GET", "/contexts", own_token},
     call<&e2b_api::list_contexts>,
     e2b_errors},
    {{"e2b_context_create", "POST", "/contexts", own_token},
     call<&e2b_api::create_context>,
     {.sheds_load = true, .errors = route_errors::e2b}},
    {{"e2b_context_delete", "DELETE", "/contexts/{context_id}", own_token},
     call<&e2b_api::delete_context>,
     e2b_errors},
    {{"e2b_context_restart", "POST", "/contexts/{context_id}/restart", own_token},
     call<&e2b_api::restart_context>,
     e2b_errors},
    {{"e2b_file_read", "GET", "/files", own_token}, call<&e2b_api::read_file>, e2b_errors},
    {{"e2b_file_write", "POST", "/files", own_token},
     call<&e2b_api::write_file>,
     {.body = upload_limit, .errors = route_errors::e2b}},
    // Refuses no one: 204 for a running sandbox named with its token, else 502, as E2B's proxy.
    {{"e2b_health", "GET", "/health", open}, call<&e2b_api::health>, e2b_errors},
    // envd's Connect services.
    {{"e2b_filesystem_rpc", "POST", "/filesystem.Filesystem/{method}", own_token},
     streamed<&e2b_api::call_filesystem>,
     e2b_errors},
    {{"e2b_process_rpc", "POST", "/process.Process/{method}", own_token},
     streamed<&e2b_api::call_process>,
     e2b_errors},

    // The web UI: GET of any other path, with --web-root.
    {{"static_file", "GET", "/{path...}", open, fallback}, static_file, {.when = has_web_root}},
};

// The route as this configuration serves it, or none.
std::optional<route_spec> served(const route_row& row, const server_config& config) {
    if (row.extras.when && !row.extras.when(config)) return std::nullopt;
    route_spec spec = row.spec;
    if (row.extras.open_when && row.extras.open_when(config)) spec.access = route_access::open;
    return spec;
}

// New kernels, contexts and one-shot executions, while the host is past its capacity
// (common/host_load.hpp): refused 503 with Retry-After before their body is read, so the work
// already running keeps its pace and a client knows to come back.
std::function<std::optional<http_response>()> shed_when_saturated(const host_load& host) {
    return [&host]() -> std::optional<http_response> {
        if (!host.saturated()) return std::nullopt;
        host.count_refusal();
        const int after = host.retry_after_seconds();
        auto res = error_response(http::status::service_unavailable,
                                  host.reason() +
                                      "; new work is refused until it eases: retry "
                                      "after " +
                                      std::to_string(after) + " s");
        res.set(http::field::retry_after, std::to_string(after));
        return res;
    };
}

}  // namespace

std::span<const route_row> route_table() { return table; }

router route_table_router(const server_config& config) {
    router r;
    for (const auto& row : table)
        if (auto spec = served(row, config)) r.add(*spec);
    return r;
}

void register_routes(request_dispatcher& d, gateway_services& s) {
    for (const auto& row : table) {
        auto spec = served(row, s.config);
        if (!spec) continue;
        route_options options;
        if (row.extras.body) {
            auto limit = row.extras.body(s);
            options.body_limit = limit.bytes;
            options.body_limit_note = std::move(limit.note);
        }
        if (row.extras.unauthorized) options.unauthorized = row.extras.unauthorized;
        if (row.extras.sheds_load) options.admit = shed_when_saturated(s.host);
        d.add(
            *spec, [&s, run = row.handler](incoming_request in) { run(s, std::move(in)); },
            std::move(options));
    }
}

}  // namespace callisto::gateway
