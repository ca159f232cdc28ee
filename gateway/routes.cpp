#include "gateway/routes.hpp"

#include <charconv>
#include <optional>

#include <boost/beast/websocket/rfc6455.hpp>

#include "gateway/http/beast.hpp"
#include "gateway/http/content_headers.hpp"
#include "gateway/http/json_response.hpp"
#include "gateway/http/openapi_document.hpp"
#include "gateway/http/static_files.hpp"
#include "gateway/interpreter/events_session.hpp"
#include "gateway/interpreter/ndjson_stream.hpp"
#include "gateway/jupyter_api/websocket_session.hpp"

namespace callisto::gateway {
namespace {

http_response websocket_only() {
    return error_response(http::status::bad_request,
                          "this endpoint speaks WebSocket only (Upgrade: websocket)");
}

// GET /api/kernels/{id}/channels: a Jupyter client attaches to a kernel.
void kernel_channels(gateway_services& s, incoming_request in) {
    if (!beast::websocket::is_upgrade(in.req)) return in.respond(websocket_only());
    // Only the owner, or an admin attaching to debug, reaches a kernel's channels.
    const user& who = *in.who;
    auto kernel = is_valid_kernel_id(in.where.kernel_id)
                      ? s.kernels.find_for(in.where.kernel_id, who)
                      : nullptr;
    if (!kernel) return in.respond(s.kernels_rest.no_such_kernel(in.where.kernel_id, who));
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

// GET /v1/contexts/{id}/events: a context's executions as they happen.
void context_events(gateway_services& s, incoming_request in) {
    // The owner check first, as for the REST routes: others learn nothing, not even that it
    // speaks WebSocket.
    auto context = s.interpreter_rest.find_context(in.where.context_id, *in.who);
    if (!context)
        return in.respond(error_response(http::status::not_found,
                                         "Context does not exist: " + in.where.context_id));
    if (!beast::websocket::is_upgrade(in.req)) return in.respond(websocket_only());
    auto taken = in.take_connection();
    auto ws = std::make_shared<interpreter::events_session>(
        std::move(taken.stream), std::move(context), s.interpreter_rest.settings(), s.config, s.log,
        &s.host, std::move(taken.slot));
    s.sessions.add(ws, "events_websocket", in.who->name);
    ws->run(std::move(in.req));
}

// The /v1 REST routes; only a streamed execution takes the connection, which then closes after
// the stream.
void interpreter_route(gateway_services& s, incoming_request in) {
    auto take = in.take_connection;
    auto take_stream = [&s, take, name = in.who->name] {
        auto taken = take();
        auto stream = std::make_shared<interpreter::ndjson_stream>(std::move(taken.stream),
                                                                   std::move(taken.slot));
        s.sessions.add(stream, "execution_stream", name);
        return stream;
    };
    s.interpreter_rest.handle(in.where, std::move(in.req), *in.who, std::move(in.respond),
                              std::move(in.respond_file), take_stream);
}

// New kernels, contexts and one-shot executions, while the host is past its capacity
// (common/host_load.hpp): refused 503 with Retry-After before their body is read, so the work
// already running keeps its pace and a client knows to come back.
route_options shed_when_saturated(gateway_services& s, route_options options = {}) {
    options.admit = [&host = s.host]() -> std::optional<http_response> {
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
    return options;
}

// The E2B facade's routes (gateway/e2b/), registered in one place. The data plane's routes
// are public to the dispatcher: the facade checks the sandbox's access token.
void register_e2b_routes(request_dispatcher& d, gateway_services& s) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(route_kind::route_kind_count); ++i) {
        const auto k = static_cast<route_kind>(i);
        if (!is_e2b_route(k)) continue;
        route_options options;
        if (k == route_kind::e2b_files) {
            options.body_limit = s.interpreter_rest.max_upload_bytes();
            options.body_limit_note = "set by --upload-limit";
        }
        if (k == route_kind::e2b_sandboxes || k == route_kind::e2b_contexts)
            options = shed_when_saturated(s, std::move(options));
        d.handle(
            k,
            [&s](incoming_request in) {
                auto take = in.take_connection;
                auto take_stream = [&s, take] {
                    auto taken = take();
                    auto stream = std::make_shared<interpreter::ndjson_stream>(
                        std::move(taken.stream), std::move(taken.slot));
                    s.sessions.add(stream, "e2b_execution_stream", "e2b");
                    return stream;
                };
                s.e2b.handle(in.where, std::move(in.req), in.who ? &*in.who : nullptr,
                             std::move(in.respond), std::move(in.respond_file), take_stream);
            },
            options);
    }
}

}  // namespace

void register_routes(request_dispatcher& d, gateway_services& s) {
    register_e2b_routes(d, s);
    using kind = route_kind;
    d.handle(kind::api_info, [](incoming_request in) {
        in.respond(json_response(http::status::ok,
                                 {{"version", CALLISTO_VERSION}, {"gateway", "callisto"}}));
    });
    d.handle(kind::healthz, [](incoming_request in) {
        in.respond(json_response(http::status::ok, {{"status", "ok"}}));
    });
    d.handle(kind::readyz, [&s](incoming_request in) {
        auto report = s.ready.check();
        in.respond(json_response(
            report.ready ? http::status::ok : http::status::service_unavailable, report.body));
    });
    // Admins only: the figures are the whole server's. --metrics-public: a scraper without one.
    d.handle(kind::metrics,
             [&s](incoming_request in) {
                 if (!s.config.metrics_public && !in.who->admin)
                     return in.respond(error_response(http::status::forbidden,
                                                      "GET /metrics needs an admin's token"));
                 http_response res{http::status::ok, 11};
                 res.set(http::field::content_type, metrics::registry::content_type);
                 res.set(http::field::cache_control, "no-store");
                 res.body() = s.metrics.render();
                 res.prepare_payload();
                 in.respond(std::move(res));
             },
             {.without_token = s.config.metrics_public});
    d.handle(kind::openapi_document, [](incoming_request in) {
        http_response res{http::status::ok, 11};
        res.set(http::field::content_type, "application/json");
        res.set(http::field::cache_control, "no-cache");
        res.body() = std::string(openapi_document());
        res.prepare_payload();
        in.respond(std::move(res));
    });
    d.handle(kind::static_file, [&s](incoming_request in) {
        auto res =
            serve_file(s.config.web_root, in.where.file.empty() ? "index.html" : in.where.file);
        set_web_ui_headers(res);
        in.respond(std::move(res));
    });

    for (kind k : {kind::kernelspecs_list, kind::kernelspec_get, kind::kernelspec_resource})
        d.handle(k, [&s](incoming_request in) {
            s.kernelspecs_rest.handle(in.where, in.req, in.respond);
        });
    for (kind k : {kind::kernels_list, kind::kernel_create, kind::kernel_get, kind::kernel_delete,
                   kind::kernel_interrupt, kind::kernel_restart})
        d.handle(
            k,
            [&s](incoming_request in) {
                s.kernels_rest.handle(in.where, in.req, *in.who, std::move(in.respond));
            },
            k == kind::kernel_create ? shed_when_saturated(s) : route_options{});
    d.handle(kind::kernel_channels,
             [&s](incoming_request in) { kernel_channels(s, std::move(in)); });

    for (std::size_t i = 0; i < static_cast<std::size_t>(kind::route_kind_count); ++i) {
        const auto k = static_cast<kind>(i);
        if (!is_interpreter_route(k) || k == kind::context_events) continue;
        route_options options;
        // Uploads have their own, larger body limit.
        if (k == kind::file_put || k == kind::files_upload) {
            options.body_limit = s.interpreter_rest.max_upload_bytes();
            options.body_limit_note = "set by --upload-limit";
        }
        if (k == kind::context_create || k == kind::oneshot_create)
            options = shed_when_saturated(s, std::move(options));
        d.handle(
            k, [&s](incoming_request in) { interpreter_route(s, std::move(in)); }, options);
    }
    d.handle(kind::context_events, [&s](incoming_request in) { context_events(s, std::move(in)); });
    d.handle(kind::whoami, [&s](incoming_request in) { in.respond(s.admin_rest.whoami(*in.who)); });
    d.handle(kind::admin_overview,
             [&s](incoming_request in) { in.respond(s.admin_rest.overview(*in.who)); });

    // MCP hosts send bearer tokens and expect 401 with a challenge when it is wrong; a body
    // carries upload_file's base64 content.
    d.handle(kind::mcp,
             [&s](incoming_request in) { s.mcp.handle(in.req, *in.who, std::move(in.respond)); },
             {s.mcp.max_body_bytes(),
              "which leaves room for upload_file's content in base64: a file of up to "
              "--upload-limit, at "
              "most 16MiB",
              [] { return mcp::mcp_endpoint::unauthorized(); }});
}

}  // namespace callisto::gateway
