#include "gateway/interpreter/interpreter_api.hpp"

#include "gateway/jupyter_api/kernel_error_answer.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include "common/media_types.hpp"
#include "gateway/http/beast.hpp"
#include "gateway/http/content_headers.hpp"
#include "gateway/interpreter/multipart_form.hpp"
#include "gateway/interpreter/oneshot_request.hpp"
#include "gateway/interpreter/workdir_files.hpp"
#include "kernelproto/iso_time.hpp"

namespace callisto::gateway::interpreter {

namespace {

http_response no_such_context(const std::string& id) {
    return error_response(http::status::not_found, "Context does not exist: " + id);
}

http_response no_such_execution(const std::string& id) {
    return error_response(http::status::not_found, "Execution does not exist: " + id);
}

http_response queue_full(std::size_t limit) {
    auto res = error_response(http::status::too_many_requests,
                              "this context already has " + std::to_string(limit) +
                                  " executions waiting; try again when one has finished");
    res.set(http::field::retry_after, "1");
    return res;
}

std::string content_type_for(std::string_view path) {
    const auto type = media_type_of(path);
    // Never text/html nor script: a downloaded file must not run as a page of this origin
    // (and every active or unknown type goes as an attachment in a sandbox:
    // set_untrusted_file_headers).
    if (!type || *type == "text/html" || *type == "text/javascript" || *type == "text/css")
        return "application/octet-stream";
    if (*type == "text/csv") return "text/csv";
    if (type->starts_with("text/")) return "text/plain; charset=utf-8";  // code, markdown, ...
    return std::string(*type);
}

http_response file_error_response(const file_error& e) {
    return error_response(static_cast<http::status>(e.http_status), e.message);
}

std::string line(const nlohmann::json& event) {
    return event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The answer to a repeated idempotency key: the first run's result when it has ended, else
// where to find it.
http_response repeated_answer(const std::shared_ptr<execution>& e, const std::string& location) {
    auto res =
        json_response(e->finished() ? http::status::ok : http::status::accepted, e->to_json());
    res.set(http::field::location, location);
    return res;
}

http_response context_gone(const std::string& id, const kernels::culled_kernel& culled) {
    return json_response(
        http::status::gone,
        {{"reason", "culled"},
         {"culled_at", kernelproto::format_iso_time(culled.culled_at)},
         {"message", "Context " + id + " was culled with its kernel: " + culled.reason}});
}

}  // namespace

interpreter_api::interpreter_api(context_registry& contexts)
    : contexts_(contexts),
      oneshots_(contexts.settings().oneshot_kept, contexts.settings().oneshot_kept_per_user) {}

interpreter_api::~interpreter_api() { file_pool_.join(); }

void interpreter_api::handle(const route& r, http_request req, const user& who, respond_fn respond,
                             respond_file_fn respond_file, const take_stream_fn& take_stream) {
    if (r.kind == route_kind::contexts_list) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& c : contexts_.list_for(who)) list.push_back(c->model());
        return respond(json_response(http::status::ok, list));
    }
    if (r.kind == route_kind::languages_list)
        return respond(json_response(http::status::ok, contexts_.languages()));
    if (r.kind == route_kind::context_create) return create_context(req, who, std::move(respond));
    if (r.kind == route_kind::oneshot_create)
        return create_oneshot(req, who, std::move(respond), take_stream);
    if (r.kind == route_kind::oneshot_get || r.kind == route_kind::oneshot_delete)
        return handle_oneshot(r, who, std::move(respond));

    auto context =
        is_valid_kernel_id(r.context_id) ? contexts_.find_for(r.context_id, who) : nullptr;
    if (!context) {
        if (auto culled = is_valid_kernel_id(r.context_id) ? contexts_.culled_for(r.context_id, who)
                                                           : std::nullopt)
            return respond(context_gone(r.context_id, *culled));
        return respond(no_such_context(r.context_id));
    }

    switch (r.kind) {
        case route_kind::context_get:
            return respond(json_response(http::status::ok, context->model()));
        case route_kind::context_delete:
            return contexts_.remove(context, [respond = std::move(respond)] {
                respond(empty_response(http::status::no_content));
            });
        case route_kind::context_restart:
            return context->restart([respond = std::move(respond), context](std::string error) {
                respond(error.empty() ? json_response(http::status::ok, context->model())
                                      : error_response(http::status::internal_server_error,
                                                       "restart failed: " + error));
            });
        case route_kind::executions_list:
            return context->list([respond = std::move(respond)](nlohmann::json list) {
                respond(json_response(http::status::ok, list));
            });
        case route_kind::execution_create:
            return create_execution(context, req, std::move(respond), take_stream);
        case route_kind::files_list:
        case route_kind::files_upload:
        case route_kind::file_get:
        case route_kind::file_put:
        case route_kind::file_delete:
            return boost::asio::post(
                file_pool_, [this, r, req = std::move(req), context, respond = std::move(respond),
                             respond_file = std::move(respond_file)]() mutable {
                    handle_files(r, req, context, std::move(respond), std::move(respond_file));
                });
        case route_kind::execution_get:
        case route_kind::execution_delete: {
            if (!is_valid_kernel_id(r.execution_id))
                return respond(no_such_execution(r.execution_id));
            auto answer = [respond = std::move(respond), id = r.execution_id,
                           del = r.kind ==
                                 route_kind::execution_delete](std::shared_ptr<execution> e) {
                if (!e) return respond(no_such_execution(id));
                const bool done = e->finished();
                respond(json_response(del && !done ? http::status::accepted : http::status::ok,
                                      e->to_json()));
            };
            if (r.kind == route_kind::execution_get)
                return context->find(r.execution_id, std::move(answer));
            return context->interrupt(r.execution_id, std::move(answer));
        }
        default: return respond(error_response(http::status::not_found, "not found"));
    }
}

void interpreter_api::handle_files(const route& r, const http_request& req,
                                   const std::shared_ptr<interpreter_context>& context,
                                   respond_fn respond, respond_file_fn respond_file) {
    const auto& settings = contexts_.settings();
    workdir_files files(context->workdir());
    if (r.kind == route_kind::files_list) {
        nlohmann::json list;
        bool truncated = false;
        const auto hidden = query_param(r.query, "hidden");
        if (!hidden.empty() && hidden != "true" && hidden != "false")
            return respond(
                error_response(http::status::bad_request, "'hidden' must be true or false"));
        if (auto e = files.list(list, settings.max_listed_files, hidden == "true", truncated))
            return respond(file_error_response(*e));
        return respond(
            json_response(http::status::ok, {{"files", list}, {"truncated", truncated}}));
    }
    if (r.kind == route_kind::file_put) {
        if (auto e = files.write(r.file, req.body())) return respond(file_error_response(*e));
        auto res =
            json_response(http::status::created, {{"path", r.file}, {"size", req.body().size()}});
        res.set(http::field::location, "/v1/contexts/" + context->id() + "/files/" + r.file);
        return respond(std::move(res));
    }
    if (r.kind == route_kind::files_upload) return upload_form(req, context, std::move(respond));
    if (r.kind == route_kind::file_delete) {
        if (auto e = files.remove(r.file)) return respond(file_error_response(*e));
        return respond(empty_response(http::status::no_content));
    }
    // Opened here, with the workdir's path checks; read by the connection as the client takes
    // it, so a client that does not read holds a chunk of the file, not the file.
    unique_fd fd;
    std::uint64_t size = 0;
    if (auto e = files.open_for_read(r.file, fd, size, settings.max_download_bytes)) {
        if (e->http_status == 413)
            e->message += " (the largest download: 100MiB, or --upload-limit when larger)";
        return respond(file_error_response(*e));
    }
    file_response res{http::status::ok, 11};
    res.set(http::field::content_type, content_type_for(r.file));
    res.set(http::field::cache_control, "no-store");
    // Kernel code wrote it: it may be an SVG or HTML page with a script (issue 10).
    set_untrusted_file_headers(res, r.file);
    res.body().file = std::move(fd);
    res.body().size = size;
    res.prepare_payload();
    respond_file(std::move(res));
}

void interpreter_api::upload_form(const http_request& req,
                                  const std::shared_ptr<interpreter_context>& context,
                                  respond_fn respond) {
    const auto content_type = req[http::field::content_type];
    if (!beast::iequals(content_type.substr(0, content_type.find(';')), "multipart/form-data"))
        return respond(error_response(http::status::unsupported_media_type,
                                      "POST a multipart/form-data form of files, or PUT the raw "
                                      "bytes to /v1/contexts/{id}/files/{path}"));
    std::string error;
    auto files = parse_upload_form(req.body(), content_type, multipart_limits{}, error);
    if (!files) return respond(error_response(http::status::bad_request, error));
    std::vector<workdir_files::file_to_write> writes;
    nlohmann::json written = nlohmann::json::array();
    for (const auto& f : *files) {
        writes.push_back({f.path, f.content});
        written.push_back({{"path", f.path}, {"size", f.content.size()}});
    }
    if (auto e = workdir_files(context->workdir()).write_all(writes))
        return respond(file_error_response(*e));
    auto res = json_response(http::status::created, {{"files", written}});
    // One Location for a 201, as PUT gives: the first file's (most forms carry one).
    res.set(http::field::location,
            "/v1/contexts/" + context->id() + "/files/" + files->front().path);
    respond(std::move(res));
}

void interpreter_api::create_context(const http_request& req, const user& who, respond_fn respond) {
    std::string error;
    auto request = parse_context_request(req.body(), error);
    if (!request) return respond(error_response(http::status::bad_request, error));
    if (auto why = contexts_.choose_kernel(*request))
        return respond(error_response(http::status::bad_request, *why));
    contexts_.create(*request, who, [respond = std::move(respond)](create_context_result r) {
        if (!r.context) return respond(jupyter_api::kernel_error_answer(r.error, r.message));
        auto res = json_response(http::status::created, r.context->model());
        res.set(http::field::location, "/v1/contexts/" + r.context->id());
        respond(std::move(res));
    });
}

void interpreter_api::create_execution(const std::shared_ptr<interpreter_context>& context,
                                       const http_request& req, respond_fn respond,
                                       const take_stream_fn& take_stream) {
    std::string error;
    auto request = parse_execution_request(req.body(), req[http::field::accept],
                                           contexts_.settings().request_limits, error);
    if (!request) return respond(error_response(http::status::bad_request, error));
    auto stream = request->stream ? take_stream() : nullptr;
    submit_and_answer(context, std::move(*request),
                      "/v1/contexts/" + context->id() + "/executions/", std::move(respond),
                      std::move(stream));
}

void interpreter_api::create_oneshot(const http_request& req, const user& who, respond_fn respond,
                                     const take_stream_fn& take_stream) {
    std::string error;
    auto request = parse_oneshot_request(req.body(), req[http::field::accept],
                                         contexts_.settings().request_limits, error);
    if (!request) return respond(error_response(http::status::bad_request, error));
    if (auto why = contexts_.choose_kernel(request->context))
        return respond(error_response(http::status::bad_request, *why));
    const std::string key = request->execution.idempotency_key;
    if (!key.empty()) {
        auto claim = oneshots_.claim_key(who.name, key);
        if (claim.state == oneshot_executions::key_state::known)
            return respond(repeated_answer(claim.exec, "/v1/executions/" + claim.exec->id()));
        if (claim.state == oneshot_executions::key_state::reserved) {
            auto res = error_response(http::status::conflict,
                                      "an execution with this idempotency key is starting; "
                                      "ask again in a moment");
            res.set(http::field::retry_after, "1");
            return respond(std::move(res));
        }
    }
    // The connection is taken now, on its strand: the context may take seconds to start.
    auto stream = request->execution.stream ? take_stream() : nullptr;
    if (stream) respond = [stream](http_response res) { stream->respond(std::move(res)); };
    contexts_.create(
        request->context, who,
        [this, owner = who.name, key, exec_request = std::move(request->execution),
         respond = std::move(respond), stream](create_context_result r) mutable {
            if (!r.context) {
                if (!key.empty()) oneshots_.release_key(owner, key);
                return respond(jupyter_api::kernel_error_answer(r.error, r.message));
            }
            auto context = r.context;
            submit_and_answer(
                context, std::move(exec_request), "/v1/executions/", respond, std::move(stream),
                [this, owner, context](const std::shared_ptr<execution>& e) {
                    oneshots_.add(owner, e, context);
                    // The context goes as soon as the execution has ended; its kernel is kept
                    // or destroyed by the policy. Posted: sinks run under the execution's lock.
                    e->subscribe([this, context](const nlohmann::json&, bool last) {
                        if (last) contexts_.remove_later(context);
                    });
                },
                // Closed before the run began (its kernel culled or deleted meanwhile, the server
                // stopping): neither the key nor the context may outlive the refusal.
                [this, owner, key, context] {
                    if (!key.empty()) oneshots_.release_key(owner, key);
                    contexts_.remove_later(context);
                });
        });
}

void interpreter_api::handle_oneshot(const route& r, const user& who, respond_fn respond) {
    auto found =
        is_valid_kernel_id(r.execution_id) ? oneshots_.find_for(r.execution_id, who) : std::nullopt;
    if (!found) return respond(no_such_execution(r.execution_id));
    auto context = found->context.lock();
    if (r.kind == route_kind::oneshot_get || found->exec->finished() || !context)
        return respond(json_response(http::status::ok, found->exec->to_json()));
    context->interrupt(
        found->exec->id(), [respond = std::move(respond)](std::shared_ptr<execution> e) {
            if (!e) return respond(error_response(http::status::not_found, "execution ended"));
            respond(json_response(e->finished() ? http::status::ok : http::status::accepted,
                                  e->to_json()));
        });
}

void interpreter_api::submit_and_answer(
    const std::shared_ptr<interpreter_context>& context, execution_request request,
    std::string location_prefix, respond_fn respond, std::shared_ptr<ndjson_stream> stream,
    std::function<void(const std::shared_ptr<execution>&)> on_accepted,
    std::function<void()> on_refused) {
    context->submit(std::move(request), [respond = std::move(respond), stream = std::move(stream),
                                         location_prefix = std::move(location_prefix),
                                         on_accepted = std::move(on_accepted),
                                         on_refused = std::move(on_refused),
                                         limit = contexts_.settings().queue_limit](
                                            interpreter_context::submit_result r) {
        auto answer =
            stream ? respond_fn([stream](http_response res) { stream->respond(std::move(res)); })
                   : respond;
        if (r.outcome == interpreter_context::submit_outcome::refused) {
            if (on_refused) on_refused();
            return answer(error_response(http::status::bad_request, r.why));
        }
        if (r.outcome == interpreter_context::submit_outcome::queue_full || !r.exec) {
            if (on_refused) on_refused();
            if (r.exec == nullptr && r.outcome != interpreter_context::submit_outcome::queue_full)
                return answer(error_response(http::status::conflict, "the context is closed"));
            return answer(queue_full(limit));
        }
        const std::string location = location_prefix + r.exec->id();
        const bool repeated = r.outcome == interpreter_context::submit_outcome::repeated;
        if (!repeated && on_accepted) on_accepted(r.exec);
        if (stream) {
            stream->begin(http::status::ok, "Location: " + location + "\r\n");
            stream->write_line(
                line({{"type", "queued"}, {"id", r.exec->id()}, {"repeated", repeated}}));
            r.exec->subscribe([stream](const nlohmann::json& event, bool last) {
                stream->write_line(line(event));
                if (last) stream->end();
            });
            return;
        }
        r.exec->subscribe([respond, location](const nlohmann::json& event, bool last) {
            if (!last) return;
            auto res = json_response(http::status::ok, event["execution"]);
            res.set(http::field::location, location);
            respond(std::move(res));
        });
    });
}

}  // namespace callisto::gateway::interpreter
