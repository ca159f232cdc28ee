#include "gateway/interpreter/interpreter_api.hpp"

#include "gateway/jupyter_api/kernel_error_answer.hpp"

#include <mutex>
#include <optional>
#include <variant>

#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include "common/media_types.hpp"
#include "gateway/http/beast.hpp"
#include "gateway/http/content_headers.hpp"
#include "gateway/interpreter/multipart_form.hpp"
#include "gateway/interpreter/oneshot_request.hpp"
#include "gateway/interpreter/snapshot_files.hpp"
#include "gateway/interpreter/workdir_files.hpp"
#include "gateway/languages/python_snapshot.hpp"
#include "kernelproto/ids.hpp"
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
      snapshots_(contexts.settings().snapshot_dir.empty()
                     ? nullptr
                     : std::make_unique<snapshot_store>(contexts.settings().snapshot_dir,
                                                        contexts.settings().snapshot_limits)),
      oneshots_(contexts.settings().oneshot_kept, contexts.settings().oneshot_kept_per_user) {}

interpreter_api::~interpreter_api() { file_pool_.join(); }

std::shared_ptr<interpreter_context> interpreter_api::context_of(const incoming_request& in) const {
    const std::string& id = in.where.param("context_id");
    auto context = is_valid_kernel_id(id) ? contexts_.find_for(id, *in.who) : nullptr;
    if (context) return context;
    if (auto culled = is_valid_kernel_id(id) ? contexts_.culled_for(id, *in.who) : std::nullopt)
        in.respond(context_gone(id, *culled));
    else
        in.respond(no_such_context(id));
    return nullptr;
}

void interpreter_api::list_languages(incoming_request in) {
    in.respond(json_response(http::status::ok, contexts_.languages()));
}

void interpreter_api::list_contexts(incoming_request in) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : contexts_.list_for(*in.who)) list.push_back(c->model());
    in.respond(json_response(http::status::ok, list));
}

void interpreter_api::get_context(incoming_request in) {
    if (auto context = context_of(in))
        in.respond(json_response(http::status::ok, context->model()));
}

void interpreter_api::delete_context(incoming_request in) {
    auto context = context_of(in);
    if (!context) return;
    contexts_.remove(context, [respond = std::move(in.respond)] {
        respond(empty_response(http::status::no_content));
    });
}

void interpreter_api::restart_context(incoming_request in) {
    auto context = context_of(in);
    if (!context) return;
    context->restart([respond = std::move(in.respond), context](std::string error) {
        respond(error.empty() ? json_response(http::status::ok, context->model())
                              : error_response(http::status::internal_server_error,
                                               "restart failed: " + error));
    });
}

void interpreter_api::list_executions(incoming_request in) {
    auto context = context_of(in);
    if (!context) return;
    context->list([respond = std::move(in.respond)](nlohmann::json list) {
        respond(json_response(http::status::ok, list));
    });
}

void interpreter_api::get_execution(incoming_request in) { answer_execution(std::move(in), false); }

void interpreter_api::interrupt_execution(incoming_request in) {
    answer_execution(std::move(in), true);
}

void interpreter_api::answer_execution(incoming_request in, bool interrupt) {
    auto context = context_of(in);
    if (!context) return;
    const std::string id = in.where.param("execution_id");
    if (!is_valid_kernel_id(id)) return in.respond(no_such_execution(id));
    // 404 when it is unknown, 202 when a DELETE interrupted one still running, else 200.
    auto answer = [respond = std::move(in.respond), id, interrupt](std::shared_ptr<execution> e) {
        if (!e) return respond(no_such_execution(id));
        const bool done = e->finished();
        respond(json_response(interrupt && !done ? http::status::accepted : http::status::ok,
                              e->to_json()));
    };
    if (interrupt) return context->interrupt(id, std::move(answer));
    context->find(id, std::move(answer));
}

template <class Work>
void interpreter_api::on_file_pool(incoming_request in, Work work) {
    auto context = context_of(in);
    if (!context) return;
    boost::asio::post(file_pool_, [in = std::move(in), context = std::move(context),
                                   work = std::move(work)]() mutable { work(in, context); });
}

void interpreter_api::list_files(incoming_request in) {
    on_file_pool(std::move(in), [this](incoming_request& request,
                                       const std::shared_ptr<interpreter_context>& context) {
        nlohmann::json list;
        bool truncated = false;
        const auto hidden = query_param(request.where.query, "hidden");
        if (!hidden.empty() && hidden != "true" && hidden != "false")
            return request.respond(
                error_response(http::status::bad_request, "'hidden' must be true or false"));
        if (auto e =
                workdir_files(context->workdir())
                    .list(list, contexts_.settings().max_listed_files, hidden == "true", truncated))
            return request.respond(file_error_response(*e));
        request.respond(
            json_response(http::status::ok, {{"files", list}, {"truncated", truncated}}));
    });
}

void interpreter_api::put_file(incoming_request in) {
    on_file_pool(std::move(in), [](incoming_request& request,
                                   const std::shared_ptr<interpreter_context>& context) {
        const std::string& path = request.where.param("path");
        if (auto e = workdir_files(context->workdir()).write(path, request.req.body()))
            return request.respond(file_error_response(*e));
        auto res = json_response(http::status::created,
                                 {{"path", path}, {"size", request.req.body().size()}});
        res.set(http::field::location, "/v1/contexts/" + context->id() + "/files/" + path);
        request.respond(std::move(res));
    });
}

void interpreter_api::delete_file(incoming_request in) {
    on_file_pool(std::move(in), [](incoming_request& request,
                                   const std::shared_ptr<interpreter_context>& context) {
        if (auto e = workdir_files(context->workdir()).remove(request.where.param("path")))
            return request.respond(file_error_response(*e));
        request.respond(empty_response(http::status::no_content));
    });
}

void interpreter_api::download_file(incoming_request in) {
    on_file_pool(std::move(in), [this](incoming_request& request,
                                       const std::shared_ptr<interpreter_context>& context) {
        const std::string& path = request.where.param("path");
        // Opened here, with the workdir's path checks; read by the connection as the client
        // takes it, so a client that does not read holds a chunk of the file, not the file.
        unique_fd fd;
        std::uint64_t size = 0;
        if (auto e = workdir_files(context->workdir())
                         .open_for_read(path, fd, size, contexts_.settings().max_download_bytes)) {
            if (e->http_status == 413)
                e->message += " (the largest download: 100MiB, or --upload-limit when larger)";
            return request.respond(file_error_response(*e));
        }
        file_response res{http::status::ok, 11};
        res.set(http::field::content_type, content_type_for(path));
        res.set(http::field::cache_control, "no-store");
        // Kernel code wrote it: it may be an SVG or HTML page with a script (issue 10).
        set_untrusted_file_headers(res, path);
        res.body().file = std::move(fd);
        res.body().size = size;
        res.prepare_payload();
        request.respond_file(std::move(res));
    });
}

namespace {

void upload_form(const http_request& req, const std::shared_ptr<interpreter_context>& context,
                 const respond_fn& respond) {
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

}  // namespace

void interpreter_api::upload_files(incoming_request in) {
    on_file_pool(std::move(in), [](incoming_request& request,
                                   const std::shared_ptr<interpreter_context>& context) {
        upload_form(request.req, context, request.respond);
    });
}

void interpreter_api::create_context(incoming_request in) {
    const http_request& req = in.req;
    const user& who = *in.who;
    const respond_fn& respond = in.respond;
    std::string error;
    auto request = parse_context_request(req.body(), error);
    if (!request) return respond(error_response(http::status::bad_request, error));
    if (auto why = contexts_.choose_kernel(*request))
        return respond(error_response(http::status::bad_request, *why));
    if (!request->network_allow.empty())
        if (auto why = network_refusal(request->network_allow, contexts_.settings().egress_allow,
                                       who.egress_allow))
            return respond(error_response(http::status::forbidden, *why));
    if (!request->from_snapshot.empty()) return restore_context(std::move(*request), std::move(in));
    contexts_.create(*request, who, [respond = std::move(in.respond)](create_context_result r) {
        if (!r.context) return respond(jupyter_api::kernel_error_answer(r.error, r.message));
        auto res = json_response(http::status::created, r.context->model());
        res.set(http::field::location, "/v1/contexts/" + r.context->id());
        respond(std::move(res));
    });
}

void interpreter_api::create_execution(incoming_request in, const take_stream_fn& take_stream) {
    auto context = context_of(in);
    if (!context) return;
    std::string error;
    auto request = parse_execution_request(in.req.body(), in.req[http::field::accept],
                                           contexts_.settings().request_limits, error);
    if (!request) return in.respond(error_response(http::status::bad_request, error));
    auto stream = request->stream ? take_stream() : nullptr;
    submit_and_answer(context, std::move(*request),
                      "/v1/contexts/" + context->id() + "/executions/", std::move(in.respond),
                      std::move(stream));
}

void interpreter_api::create_oneshot(incoming_request in, const take_stream_fn& take_stream) {
    const http_request& req = in.req;
    const user& who = *in.who;
    respond_fn respond = std::move(in.respond);
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

std::optional<oneshot_executions::entry> interpreter_api::oneshot_of(
    const incoming_request& in) const {
    const std::string& id = in.where.param("execution_id");
    auto found = is_valid_kernel_id(id) ? oneshots_.find_for(id, *in.who) : std::nullopt;
    if (!found) in.respond(no_such_execution(id));
    return found;
}

void interpreter_api::get_oneshot(incoming_request in) {
    if (auto found = oneshot_of(in))
        in.respond(json_response(http::status::ok, found->exec->to_json()));
}

void interpreter_api::interrupt_oneshot(incoming_request in) {
    auto found = oneshot_of(in);
    if (!found) return;
    auto context = found->context.lock();
    if (found->exec->finished() || !context)
        return in.respond(json_response(http::status::ok, found->exec->to_json()));
    context->interrupt(
        found->exec->id(), [respond = std::move(in.respond)](std::shared_ptr<execution> e) {
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

namespace {

http_response snapshot_error_response(const snapshot_error& e) {
    return error_response(static_cast<http::status>(e.http_status), e.message);
}

http_response snapshots_off() {
    return error_response(http::status::not_found, "snapshots are not kept by this server");
}

std::int64_t ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 t)
        .count();
}

// An execution's failure in a sentence, from its "end" event (sinks run under the execution's
// lock: they must not ask the execution itself): its error's name and value, or its status.
std::string failure_of(const nlohmann::json& end_event) {
    const auto& e = end_event.contains("execution") ? end_event["execution"] : nlohmann::json();
    const std::string status = e.is_object() ? e.value("status", std::string()) : std::string();
    if (status == "ok") return {};
    if (e.contains("error") && e["error"].is_object())
        return e["error"].value("name", std::string("error")) + ": " +
               e["error"].value("value", std::string());
    return "the execution ended " + (status.empty() ? std::string("without a status") : status);
}

}  // namespace

void interpreter_api::run_internal(const std::shared_ptr<interpreter_context>& context,
                                   std::string code, std::function<void(std::string)> done) {
    execution_request request;
    request.code = std::move(code);
    // A large state takes its time to serialize; the longest deadline the server allows.
    request.timeout = contexts_.settings().request_limits.max_timeout;
    context->submit(
        std::move(request), [done = std::move(done)](interpreter_context::submit_result r) {
            if (!r.exec)
                return done(r.why.empty() ? "the context is closed or its queue is full" : r.why);
            // done only posts: nothing under the execution's lock waits for another.
            r.exec->subscribe([done](const nlohmann::json& event, bool last) {
                if (last) done(failure_of(event));
            });
        });
}

std::optional<http_response> interpreter_api::snapshot_refusal(
    const std::shared_ptr<interpreter_context>& context) const {
    if (context->dialect() != languages::kernel_dialect::python)
        return error_response(http::status::bad_request,
                              "only Python contexts can be snapshotted yet; this one's kernel "
                              "speaks " +
                                  std::string(languages::to_string(context->dialect())));
    if (context->busy())
        return error_response(http::status::conflict,
                              "the context is busy: an execution is queued or running; take the "
                              "snapshot when it is idle");
    return std::nullopt;
}

void interpreter_api::take_snapshot(const std::shared_ptr<interpreter_context>& context,
                                    const std::string& owner, snapshot_done done) {
    const auto started = std::chrono::steady_clock::now();
    auto finish = [this, context, owner, done = std::move(done), started](std::string error) {
        boost::asio::post(file_pool_, [this, context, owner, done, started, error] {
            if (!error.empty()) {
                remove_snapshot_leftovers(context->workdir());
                return done(snapshot_error{500, "the kernel could not save its state: " + error});
            }
            const auto& quota = snapshots_->quota();
            auto collected = collect_snapshot(
                context->workdir(), {quota.max_bytes, contexts_.settings().max_listed_files});
            if (auto* e = std::get_if<snapshot_error>(&collected)) return done(*e);
            auto& content = std::get<snapshot_content>(collected);
            content.language = "python";
            content.source_context = context->id();
            content.duration_ms = ms_since(started);
            const std::string id = kernelproto::new_uuid();
            // Copied piece by piece from the workdir; the blob is removed whatever happened.
            auto saved = snapshots_->save(id, owner, content, context->workdir());
            remove_snapshot_leftovers(context->workdir());
            if (auto* e = std::get_if<snapshot_error>(&saved)) return done(*e);
            auto model = std::get<nlohmann::json>(saved);
            model["duration_ms"] = ms_since(started);  // the write included
            done(std::move(model));
        });
    };
    run_internal(context, languages::python_snapshot::save_code(context->kernel_workdir()),
                 std::move(finish));
}

void interpreter_api::create_snapshot(incoming_request in) {
    if (!snapshots_) return in.respond(snapshots_off());
    auto context = context_of(in);
    if (!context) return;
    if (auto refused = snapshot_refusal(context)) return in.respond(std::move(*refused));
    take_snapshot(context, in.who->name,
                  [respond = in.respond](std::variant<nlohmann::json, snapshot_error> r) {
                      if (auto* e = std::get_if<snapshot_error>(&r))
                          return respond(snapshot_error_response(*e));
                      const auto& model = std::get<nlohmann::json>(r);
                      auto res = json_response(http::status::created, model);
                      res.set(http::field::location,
                              "/v1/snapshots/" + model["id"].get<std::string>());
                      respond(std::move(res));
                  });
}

void interpreter_api::list_snapshots(incoming_request in) {
    if (!snapshots_) return in.respond(snapshots_off());
    boost::asio::post(file_pool_, [this, in = std::move(in)] {
        nlohmann::json list = nlohmann::json::array();
        for (auto& model : snapshots_->list_for(*in.who)) list.push_back(std::move(model));
        in.respond(json_response(http::status::ok, list));
    });
}

void interpreter_api::get_snapshot(incoming_request in) {
    if (!snapshots_) return in.respond(snapshots_off());
    boost::asio::post(file_pool_, [this, in = std::move(in)] {
        auto found = snapshots_->get_for(in.where.param("snapshot_id"), *in.who);
        if (auto* e = std::get_if<snapshot_error>(&found))
            return in.respond(snapshot_error_response(*e));
        in.respond(json_response(http::status::ok, std::get<nlohmann::json>(found)));
    });
}

void interpreter_api::delete_snapshot(incoming_request in) {
    if (!snapshots_) return in.respond(snapshots_off());
    boost::asio::post(file_pool_, [this, in = std::move(in)] {
        if (auto e = snapshots_->remove_for(in.where.param("snapshot_id"), *in.who))
            return in.respond(snapshot_error_response(*e));
        in.respond(empty_response(http::status::no_content));
    });
}

void interpreter_api::restore_context(context_request request, incoming_request in) {
    if (!snapshots_) return in.respond(snapshots_off());
    restore_snapshot(
        std::move(request), *in.who,
        [respond = std::move(in.respond)](std::shared_ptr<interpreter_context>,
                                          http_response answer) { respond(std::move(answer)); });
}

void interpreter_api::restore_snapshot(context_request request, const user& who,
                                       restore_done done) {
    const auto started = std::chrono::steady_clock::now();
    auto respond = [done](http_response answer) { done(nullptr, std::move(answer)); };
    boost::asio::post(file_pool_, [this, request = std::move(request), who, done, respond,
                                   started]() mutable {
        const std::string snapshot_id = request.from_snapshot;
        // Every piece read and checked before any kernel is asked for: a damaged snapshot is
        // refused with its reason, and nothing is made of it.
        auto loaded = snapshots_->load_for(snapshot_id, who);
        if (auto* e = std::get_if<snapshot_error>(&loaded))
            return respond(snapshot_error_response(*e));
        // Its pieces' names in the store and checksums: their bytes stay on disk until they
        // are copied into the new workdir.
        auto content =
            std::make_shared<stored_snapshot>(std::move(std::get<stored_snapshot>(loaded)));
        if (content->language != "python")
            return respond(error_response(
                http::status::bad_request,
                "snapshot " + snapshot_id + " is of a " + content->language + " context"));
        contexts_.create(
            request, who,
            [this, content, snapshot_id, respond, done, started](create_context_result r) {
                if (!r.context)
                    return respond(jupyter_api::kernel_error_answer(r.error, r.message));
                auto context = r.context;
                auto fail = [this, context, respond](http::status status, std::string message) {
                    contexts_.remove_later(context);
                    respond(error_response(status, std::move(message)));
                };
                if (context->dialect() != languages::kernel_dialect::python)
                    return fail(
                        http::status::bad_request,
                        "a Python snapshot is restored into a Python kernel; this one speaks " +
                            std::string(languages::to_string(context->dialect())));
                boost::asio::post(file_pool_, [this, context, content, snapshot_id, done, fail,
                                               started] {
                    if (auto e = place_snapshot(context->workdir(), *content))
                        return fail(static_cast<http::status>(e->http_status), e->message);
                    run_internal(
                        context, languages::python_snapshot::load_code(context->kernel_workdir()),
                        [this, context, content, snapshot_id, done, fail,
                         started](std::string error) {
                            boost::asio::post(file_pool_, [context, content, snapshot_id, done,
                                                           fail, started, error] {
                                auto report = take_report(context->workdir());
                                if (!error.empty() || !report) {
                                    remove_snapshot_leftovers(context->workdir());
                                    return fail(http::status::internal_server_error,
                                                "the kernel could not load snapshot " +
                                                    snapshot_id + ": " +
                                                    (error.empty() ? "it left no report" : error));
                                }
                                nlohmann::json files = nlohmann::json::array();
                                for (const auto& piece : content->pieces)
                                    if (!piece.is_namespace) files.push_back(piece.path);
                                auto model = context->model();
                                model["restored"] = {{"snapshot_id", snapshot_id},
                                                     {"duration_ms", ms_since(started)},
                                                     {"carried", report->carried},
                                                     {"not_carried", report->not_carried},
                                                     {"files", files}};
                                auto res = json_response(http::status::created, model);
                                res.set(http::field::location, "/v1/contexts/" + context->id());
                                done(context, std::move(res));
                            });
                        });
                });
            });
    });
}

namespace {

// The body of POST /v1/contexts/{id}/fork: {"count": N}, N in 1..max_forks; empty: 1.
std::optional<std::size_t> parse_fork_count(std::string_view body, std::string& error) {
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return 1;
    auto doc = nlohmann::json::parse(body, nullptr, false);
    if (!doc.is_object()) {
        error = "the body must be a JSON object: {\"count\": N}";
        return std::nullopt;
    }
    for (const auto& [name, value] : doc.items())
        if (name != "count") {
            error = "unknown field '" + name + "'";
            return std::nullopt;
        }
    if (!doc.contains("count")) return 1;
    const auto& n = doc["count"];
    if (!n.is_number_integer() || n.get<std::int64_t>() < 1 ||
        n.get<std::int64_t>() > static_cast<std::int64_t>(interpreter_api::max_forks)) {
        error =
            "'count' must be an integer from 1 to " + std::to_string(interpreter_api::max_forks);
        return std::nullopt;
    }
    return n.get<std::size_t>();
}

}  // namespace

void interpreter_api::fork_context(incoming_request in) {
    if (!snapshots_) return in.respond(snapshots_off());
    auto context = context_of(in);
    if (!context) return;
    std::string error;
    const auto count = parse_fork_count(in.req.body(), error);
    if (!count) return in.respond(error_response(http::status::bad_request, error));
    if (auto refused = snapshot_refusal(context)) return in.respond(std::move(*refused));
    const auto started = std::chrono::steady_clock::now();
    // Every copy is a new context restored from one snapshot, each in its own fresh kernel;
    // the snapshot is the fork's own and is deleted when the copies have it.
    const auto model = context->model();
    context_request request;
    request.kernel = model.value("kernel", std::string());
    request.policy = kernels::kernel_policy::fresh;
    if (auto why = contexts_.choose_kernel(request))
        return in.respond(error_response(http::status::bad_request, *why));
    // A copy may reach what the original may, within the ceilings as they are now (a reloaded
    // users file may have narrowed the user's since the original was made).
    if (auto n = model.find("network"); n != model.end() && n->is_object() && n->contains("allow"))
        request.network_allow = (*n)["allow"].get<std::vector<std::string>>();
    if (!request.network_allow.empty())
        if (auto why = network_refusal(request.network_allow, contexts_.settings().egress_allow,
                                       in.who->egress_allow))
            return in.respond(error_response(http::status::forbidden, *why));
    take_snapshot(
        context, in.who->name,
        [this, request, who = *in.who, respond = in.respond, count = *count,
         started](std::variant<nlohmann::json, snapshot_error> r) {
            if (auto* e = std::get_if<snapshot_error>(&r))
                return respond(snapshot_error_response(*e));
            const auto snapshot = std::get<nlohmann::json>(std::move(r));
            struct forks {
                std::mutex mutex;
                std::vector<std::shared_ptr<interpreter_context>> made;
                std::vector<nlohmann::json> models;
                std::optional<http_response> failure;
                std::size_t left;
            };
            auto state = std::make_shared<forks>();
            state->left = count;
            auto copy = request;
            copy.from_snapshot = snapshot["id"].get<std::string>();
            for (std::size_t i = 0; i < count; ++i)
                restore_snapshot(
                    copy, who,
                    [this, state, snapshot, who, respond, started](
                        std::shared_ptr<interpreter_context> made, http_response answer) {
                        std::unique_lock lock(state->mutex);
                        if (made) {
                            state->made.push_back(made);
                            state->models.push_back(
                                nlohmann::json::parse(answer.body(), nullptr, false));
                        } else if (!state->failure) {
                            state->failure = std::move(answer);
                        }
                        if (--state->left > 0) return;
                        lock.unlock();
                        boost::asio::post(file_pool_, [this, state, snapshot, who, respond,
                                                       started] {
                            (void)snapshots_->remove_for(snapshot["id"].get<std::string>(), who);
                            if (state->failure) {
                                // All or none: the copies made are deleted with the failure's
                                // answer.
                                for (const auto& c : state->made) contexts_.remove_later(c);
                                return respond(std::move(*state->failure));
                            }
                            nlohmann::json contexts = nlohmann::json::array();
                            for (auto& m : state->models) contexts.push_back(std::move(m));
                            const std::string first = contexts[0].value("id", std::string());
                            auto res =
                                json_response(http::status::created,
                                              {{"contexts", std::move(contexts)},
                                               {"duration_ms", ms_since(started)},
                                               {"snapshot",
                                                {{"size", snapshot["size"]},
                                                 {"duration_ms", snapshot["duration_ms"]},
                                                 {"carried", snapshot["carried"]},
                                                 {"not_carried", snapshot["not_carried"]}}}});
                            // The first copy; all are in "contexts".
                            res.set(http::field::location, "/v1/contexts/" + first);
                            respond(std::move(res));
                        });
                    });
        });
}

}  // namespace callisto::gateway::interpreter
