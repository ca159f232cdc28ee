#pragma once
// Maps a request line to a route. Pure: no I/O, no state, so every path form is unit-tested.

#include <string>
#include <string_view>

namespace callisto::gateway {

enum class route_kind {
    not_found,
    method_not_allowed,
    api_info,             // GET /api
    openapi_document,     // GET /openapi.json (docs/openapi.json, compiled in)
    healthz,              // GET /healthz: the process and its event loop answer
    readyz,               // GET /readyz: ready for new users (gateway/readiness.hpp)
    metrics,              // GET /metrics: Prometheus text format
    kernelspecs_list,     // GET /api/kernelspecs
    kernelspec_get,       // GET /api/kernelspecs/{name}
    kernelspec_resource,  // GET /kernelspecs/{name}/{file}
    kernels_list,         // GET /api/kernels
    kernel_create,        // POST /api/kernels
    kernel_get,           // GET /api/kernels/{id}
    kernel_delete,        // DELETE /api/kernels/{id}
    kernel_interrupt,     // POST /api/kernels/{id}/interrupt
    kernel_restart,       // POST /api/kernels/{id}/restart
    kernel_channels,      // GET /api/kernels/{id}/channels (WebSocket upgrade)
    static_file,          // GET anything else, when a web root is configured
    // Callisto's own agent-facing API (gateway/interpreter/).
    contexts_list,     // GET /v1/contexts
    context_create,    // POST /v1/contexts
    context_get,       // GET /v1/contexts/{id}
    context_delete,    // DELETE /v1/contexts/{id}
    context_restart,   // POST /v1/contexts/{id}/restart
    executions_list,   // GET /v1/contexts/{id}/executions
    execution_create,  // POST /v1/contexts/{id}/executions
    execution_get,     // GET /v1/contexts/{id}/executions/{eid}
    execution_delete,  // DELETE /v1/contexts/{id}/executions/{eid} (interrupts it)
    context_events,    // GET /v1/contexts/{id}/events (WebSocket upgrade)
    files_list,        // GET /v1/contexts/{id}/files
    files_upload,      // POST /v1/contexts/{id}/files (multipart/form-data)
    file_get,          // GET /v1/contexts/{id}/files/{path...}
    file_put,          // PUT /v1/contexts/{id}/files/{path...} (raw body)
    file_delete,       // DELETE /v1/contexts/{id}/files/{path...}
    oneshot_create,    // POST /v1/executions (one-shot: a context of its own, by policy)
    oneshot_get,       // GET /v1/executions/{eid}
    oneshot_delete,    // DELETE /v1/executions/{eid} (interrupts it)
    languages_list,    // GET /v1/languages: which kernel runs which language
    whoami,            // GET /v1/whoami: the caller's name and role
    admin_overview,    // GET /v1/admin/overview: the warm pool, culled kernels, activity, audit
    mcp,               // POST, DELETE /mcp (gateway/mcp/); GET answers 405: no SSE stream
    bad_v1_path,       // a /v1 path with an unsafe segment ("..", "%2F", NUL, "//"): 400
    // The E2B-compatible facade (gateway/e2b/): its control plane, with the user's token (as
    // X-API-KEY), and its data plane, with the sandbox's own access token (public here: the
    // facade checks it). `name` the sandbox id, `context_id` an E2B context, and for Connect
    // calls `name` the service and `file` the method.
    e2b_sandboxes,        // GET, POST /v2/sandboxes; GET /sandboxes
    e2b_sandbox,          // GET, DELETE /sandboxes/{id}
    e2b_sandbox_timeout,  // POST /sandboxes/{id}/timeout
    e2b_sandbox_connect,  // POST /v2/sandboxes/{id}/connect
    e2b_execute,          // POST /execute (NDJSON)
    e2b_contexts,         // GET, POST /contexts
    e2b_context,          // DELETE /contexts/{id}
    e2b_context_restart,  // POST /contexts/{id}/restart
    e2b_files,            // GET, POST /files?path=
    e2b_health,           // GET /health
    e2b_rpc,              // POST /filesystem.Filesystem/{m}, /process.Process/{m} (Connect)
    // Add new kinds above this line: route_kind_count must stay last. The OpenAPI test walks
    // 0..route_kind_count and fails for a route docs/openapi.json does not describe.
    route_kind_count
};

// The enumerator's name ("kernel_get"), for logs and test messages.
std::string_view to_string(route_kind kind);

// The /v1/... routes, which belong to the interpreter API.
bool is_interpreter_route(route_kind kind);

// The E2B facade's routes, control and data plane.
bool is_e2b_route(route_kind kind);

// Routes answered without a token: GET /api (as jupyter_server), the OpenAPI document, the
// health and readiness probes (load balancers carry no token), and the static web UI.
bool is_public_route(route_kind kind);

struct route {
    route_kind kind = route_kind::not_found;
    std::string kernel_id;     // kernel_* routes
    std::string context_id;    // context_* and execution_* routes
    std::string execution_id;  // execution_get, execution_delete, oneshot_get, oneshot_delete
    std::string name;          // kernelspec name
    std::string file;          // kernelspec resource, static file or workdir path (no leading '/')
    std::string query;         // raw query string without '?'
    std::string allow;         // for method_not_allowed: the Allow header value
};

// `target` is the request-target as sent ("/api/kernels/abc?token=x"). Trailing slashes are
// accepted as jupyter_server does. Percent-escapes are decoded in path segments; a segment
// that decodes to "", ".", ".." or contains '/' or NUL never matches a name or file. HEAD
// matches as GET does (its answer is GET's without the body), but on the WebSocket routes.
route match_route(std::string_view method, std::string_view target, bool static_files_enabled);

// Value of `key` in an application/x-www-form-urlencoded query string, decoded; "" if absent.
std::string query_param(std::string_view query, std::string_view key);

// Decodes %XX and '+' (as space when plus_is_space). Returns false on a malformed escape.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space = false);

// A kernel id as Callisto makes them (canonical UUID text, lower case). Clients may choose
// their own id on create, and it must pass this too.
bool is_valid_kernel_id(std::string_view id);

}  // namespace callisto::gateway
