#include "gateway/interpreter/api/interpreter_api.hpp"

#include "gateway/jupyter_api/kernel_error_answer.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <variant>

#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include "common/media_types.hpp"
#include "gateway/http/beast.hpp"
#include "gateway/http/content_headers.hpp"
#include "gateway/interpreter/api/multipart_form.hpp"
#include "gateway/interpreter/oneshot_request.hpp"
#include "gateway/interpreter/snapshot_files.hpp"
#include "gateway/interpreter/workdir_files.hpp"
#include "gateway/languages/kernel_dialect.hpp"
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

namespace {

// Paused states count against a quota of their own bytes (the snapshot quota's), never
// against the number of snapshots their owner may keep: pausing is the server's doing too
// (--pause-idle), and must not use up what the user keeps for themselves.
snapshot_quota paused_quota(const interpreter_settings& s) {
    return {std::numeric_limits<std::size_t>::max(), s.snapshot_limits.max_bytes};
}

}  // namespace

interpreter_api::interpreter_api(context_registry& contexts)
    : contexts_(contexts),
      snapshots_(contexts.settings().snapshot_dir.empty()
                     ? nullptr
                     : std::make_unique<snapshot_store>(contexts.settings().snapshot_dir,
                                                        contexts.settings().snapshot_limits)),
      paused_states_(contexts.settings().paused_snapshot_dir.empty() || !snapshots_
                         ? nullptr
                         : std::make_unique<snapshot_store>(contexts.settings().paused_snapshot_dir,
                                                            paused_quota(contexts.settings()))),
      idle_timer_(contexts.io_context()),
      expiry_timer_(contexts.io_context()),
      oneshots_(contexts.settings().oneshot_kept, contexts.settings().oneshot_kept_per_user) {}

interpreter_api::~interpreter_api() { file_pool_.join(); }

std::shared_ptr<interpreter_context> interpreter_api::context_of(const incoming_request& in) const {
    return context_of(in.where.param("context_id"), *in.who, in.respond);
}

std::shared_ptr<interpreter_context> interpreter_api::context_of(const std::string& id,
                                                                 const user& who,
                                                                 const respond_fn& respond) const {
    auto context = is_valid_kernel_id(id) ? contexts_.find_for(id, who) : nullptr;
    if (context) return context;
    if (auto culled = is_valid_kernel_id(id) ? contexts_.culled_for(id, who) : std::nullopt)
        respond(context_gone(id, *culled));
    else
        respond(no_such_context(id));
    return nullptr;
}

void interpreter_api::list_languages(incoming_request in) {
    in.respond(json_response(http::status::ok, contexts_.languages()));
}

namespace {

// The languages a paused context runs are those of the kernel it resumes into.
nlohmann::json paused_model(const context_registry& contexts,
                            const context_registry::paused_view& p) {
    return p.record.model(languages::language_names(languages::languages_run_by(
                              contexts.dialect_of_kernel(p.record.kernel))),
                          p.resuming, contexts.settings().paused_ttl);
}

// Python and R contexts: a kernel of another language has no code of the gateway's to save
// its state with.
bool state_is_saved(languages::kernel_dialect d) {
    return languages::state_save_code(d, "/").has_value();
}

}  // namespace

void interpreter_api::list_contexts(incoming_request in) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : contexts_.list_for(*in.who)) list.push_back(c->model());
    for (const auto& p : contexts_.list_paused_for(*in.who))
        list.push_back(paused_model(contexts_, p));
    in.respond(json_response(http::status::ok, list));
}

void interpreter_api::get_context(incoming_request in) {
    const std::string& id = in.where.param("context_id");
    if (auto p = is_valid_kernel_id(id) ? contexts_.paused_for(id, *in.who) : std::nullopt)
        return in.respond(json_response(http::status::ok, paused_model(contexts_, *p)));
    if (auto context = context_of(in))
        in.respond(json_response(http::status::ok, context->model()));
}

void interpreter_api::delete_context(incoming_request in) {
    const std::string& id = in.where.param("context_id");
    if (is_paused(id, *in.who)) {
        // Its record goes, then its snapshot: nothing of it is left.
        paused_record removed;
        switch (contexts_.remove_paused(id, *in.who, &removed)) {
            case paused_table::remove_result::resuming: {
                auto res = error_response(http::status::conflict,
                                          "the context is resuming; delete it in a moment");
                res.set(http::field::retry_after, "1");
                return in.respond(std::move(res));
            }
            case paused_table::remove_result::unknown: break;  // resumed meanwhile: live
            case paused_table::remove_result::removed:
                return boost::asio::post(file_pool_, [this, removed,
                                                      respond = std::move(in.respond)] {
                    if (paused_states_)
                        (void)paused_states_->remove_for(removed.snapshot_id, user{removed.owner});
                    respond(empty_response(http::status::no_content));
                });
        }
    }
    auto context = context_of(in);
    if (!context) return;
    contexts_.remove(context, [respond = std::move(in.respond)] {
        respond(empty_response(http::status::no_content));
    });
}

void interpreter_api::restart_context(incoming_request in) {
    if (resume_first(in, &interpreter_api::restart_context)) return;
    auto context = context_of(in);
    if (!context) return;
    context->restart([respond = std::move(in.respond), context](std::string error) {
        respond(error.empty() ? json_response(http::status::ok, context->model())
                              : error_response(http::status::internal_server_error,
                                               "restart failed: " + error));
    });
}

void interpreter_api::list_executions(incoming_request in) {
    if (resume_first(in, &interpreter_api::list_executions)) return;
    auto context = context_of(in);
    if (!context) return;
    context->list([respond = std::move(in.respond)](nlohmann::json list) {
        respond(json_response(http::status::ok, list));
    });
}

void interpreter_api::get_execution(incoming_request in) {
    if (resume_first(in, &interpreter_api::get_execution)) return;
    answer_execution(std::move(in), false);
}

void interpreter_api::interrupt_execution(incoming_request in) {
    if (resume_first(in, &interpreter_api::interrupt_execution)) return;
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
    if (resume_first(in, &interpreter_api::list_files)) return;
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
    if (resume_first(in, &interpreter_api::put_file)) return;
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
    if (resume_first(in, &interpreter_api::delete_file)) return;
    on_file_pool(std::move(in), [](incoming_request& request,
                                   const std::shared_ptr<interpreter_context>& context) {
        if (auto e = workdir_files(context->workdir()).remove(request.where.param("path")))
            return request.respond(file_error_response(*e));
        request.respond(empty_response(http::status::no_content));
    });
}

void interpreter_api::download_file(incoming_request in) {
    if (resume_first(in, &interpreter_api::download_file)) return;
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
    if (resume_first(in, &interpreter_api::upload_files)) return;
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
    if (!request->from_snapshot.empty())
        return restore_context(std::move(*request), who, std::move(in.respond));
    contexts_.create(*request, who, [respond = std::move(in.respond)](create_context_result r) {
        if (!r.context) return respond(jupyter_api::kernel_error_answer(r.error, r.message));
        auto res = json_response(http::status::created, r.context->model());
        res.set(http::field::location, "/v1/contexts/" + r.context->id());
        respond(std::move(res));
    });
}

void interpreter_api::create_execution(incoming_request in, const take_stream_fn& take_stream) {
    const std::string id = in.where.param("context_id");
    const bool paused = is_paused(id, *in.who);
    auto context = paused ? nullptr : context_of(in);
    if (!context && !paused) return;
    std::string error;
    auto request = parse_execution_request(in.req.body(), in.req[http::field::accept],
                                           contexts_.settings().request_limits, error);
    if (!request) return in.respond(error_response(http::status::bad_request, error));
    auto stream = request->stream ? take_stream() : nullptr;
    if (!paused)
        return submit_and_answer(context, std::move(*request),
                                 "/v1/contexts/" + context->id() + "/executions/",
                                 std::move(in.respond), std::move(stream));
    // Paused: resumed first (once, whoever else asks meanwhile), then the execution runs in
    // the context brought back, and its answer says how long the resume took.
    respond_fn respond = std::move(in.respond);
    if (stream) respond = [stream](http_response res) { stream->respond(std::move(res)); };
    resume(id, *in.who,
           [this, id, who = *in.who,
            request = std::make_shared<execution_request>(std::move(*request)), respond,
            stream](const paused_table::outcome& how) {
               if (how.status != 0) return respond(resume_failure(how));
               const auto ms = how.duration_ms;
               auto live = contexts_.find_for(id, who);
               if (!live) return respond(no_such_context(id));
               submit_and_answer(live, std::move(*request), "/v1/contexts/" + id + "/executions/",
                                 respond, stream, {}, {}, {{"duration_ms", ms}});
           });
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
    std::function<void()> on_refused, nlohmann::json resumed) {
    context->submit(
        std::move(request),
        [respond = std::move(respond), stream = std::move(stream),
         location_prefix = std::move(location_prefix), on_accepted = std::move(on_accepted),
         on_refused = std::move(on_refused), limit = contexts_.settings().queue_limit,
         resumed = std::move(resumed)](interpreter_context::submit_result r) {
            auto answer =
                stream
                    ? respond_fn([stream](http_response res) { stream->respond(std::move(res)); })
                    : respond;
            if (r.outcome == interpreter_context::submit_outcome::refused) {
                if (on_refused) on_refused();
                return answer(error_response(http::status::bad_request, r.why));
            }
            if (r.outcome == interpreter_context::submit_outcome::queue_full || !r.exec) {
                if (on_refused) on_refused();
                if (r.exec == nullptr &&
                    r.outcome != interpreter_context::submit_outcome::queue_full)
                    return answer(error_response(http::status::conflict, "the context is closed"));
                return answer(queue_full(limit));
            }
            const std::string location = location_prefix + r.exec->id();
            const bool repeated = r.outcome == interpreter_context::submit_outcome::repeated;
            if (!repeated && on_accepted) on_accepted(r.exec);
            if (stream) {
                stream->begin(http::status::ok, "Location: " + location + "\r\n");
                nlohmann::json queued = {
                    {"type", "queued"}, {"id", r.exec->id()}, {"repeated", repeated}};
                if (!resumed.is_null()) queued["resumed"] = resumed;
                stream->write_line(line(queued));
                r.exec->subscribe([stream](const nlohmann::json& event, bool last) {
                    stream->write_line(line(event));
                    if (last) stream->end();
                });
                return;
            }
            r.exec->subscribe([respond, location, resumed](const nlohmann::json& event, bool last) {
                if (!last) return;
                auto model = event["execution"];
                // The context was paused: this execution resumed it, and says how long that took.
                if (!resumed.is_null() && model.is_object()) model["resumed"] = resumed;
                auto res = json_response(http::status::ok, model);
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
    if (!state_is_saved(context->dialect()))
        return error_response(http::status::bad_request,
                              "only Python and R contexts can be snapshotted; this one's kernel "
                              "speaks " +
                                  std::string(languages::to_string(context->dialect())));
    if (context->busy())
        return error_response(http::status::conflict,
                              "the context is busy: an execution is queued or running; take the "
                              "snapshot when it is idle");
    return std::nullopt;
}

void interpreter_api::take_snapshot(const std::shared_ptr<interpreter_context>& context,
                                    const std::string& owner, snapshot_done done,
                                    snapshot_store* store) {
    if (!store) store = snapshots_.get();
    const auto started = std::chrono::steady_clock::now();
    auto finish = [this, context, owner, done = std::move(done), started,
                   store](std::string error) {
        boost::asio::post(file_pool_, [this, context, owner, done, started, error, store] {
            if (!error.empty()) {
                remove_snapshot_leftovers(context->workdir());
                return done(snapshot_error{500, "the kernel could not save its state: " + error});
            }
            const auto& quota = store->quota();
            auto collected = collect_snapshot(
                context->workdir(), {quota.max_bytes, contexts_.settings().max_listed_files});
            if (auto* e = std::get_if<snapshot_error>(&collected)) return done(*e);
            auto& content = std::get<snapshot_content>(collected);
            content.language = std::string(languages::to_string(context->dialect()));
            content.source_context = context->id();
            content.duration_ms = ms_since(started);
            const std::string id = kernelproto::new_uuid();
            // Copied piece by piece from the workdir; the blob is removed whatever happened.
            auto saved = store->save(id, owner, content, context->workdir());
            remove_snapshot_leftovers(context->workdir());
            if (auto* e = std::get_if<snapshot_error>(&saved)) return done(*e);
            auto model = std::get<nlohmann::json>(saved);
            model["duration_ms"] = ms_since(started);  // the write included
            done(std::move(model));
        });
    };
    auto code = languages::state_save_code(context->dialect(), context->kernel_workdir());
    if (!code) return finish("a kernel of this language has no state the gateway can save");
    run_internal(context, std::move(*code), std::move(finish));
}

void interpreter_api::create_snapshot(incoming_request in) {
    snapshot_for(in.where.param("context_id"), *in.who, std::move(in.respond));
}

void interpreter_api::snapshot_for(const std::string& id, const user& sender, respond_fn respond) {
    if (resume_then(id, sender, respond,
                    [this, id, sender, respond] { snapshot_for(id, sender, respond); }))
        return;
    if (!snapshots_) return respond(snapshots_off());
    auto context = context_of(id, sender, respond);
    if (!context) return;
    if (auto refused = snapshot_refusal(context)) return respond(std::move(*refused));
    take_snapshot(
        context, sender.name,
        [this, respond, who = sender.name,
         context_id = context->id()](std::variant<nlohmann::json, snapshot_error> r) {
            if (auto* e = std::get_if<snapshot_error>(&r))
                return respond(snapshot_error_response(*e));
            const auto& model = std::get<nlohmann::json>(r);
            count_operation("snapshot", model.value("duration_ms", 0), model.value("size", 0.0));
            audit_operation("snapshot", who, context_id,
                            {{"snapshot_id", model["id"]},
                             {"size", model.value("size", std::uint64_t{0})},
                             {"duration_ms", model.value("duration_ms", 0)},
                             {"not_carried", model["not_carried"]}});
            auto res = json_response(http::status::created, model);
            res.set(http::field::location, "/v1/snapshots/" + model["id"].get<std::string>());
            respond(std::move(res));
        });
}

void interpreter_api::list_snapshots(incoming_request in) {
    list_snapshots_for(*in.who, std::move(in.respond));
}

void interpreter_api::list_snapshots_for(const user& who, respond_fn respond) {
    if (!snapshots_) return respond(snapshots_off());
    boost::asio::post(file_pool_, [this, who, respond = std::move(respond)] {
        nlohmann::json list = nlohmann::json::array();
        for (auto& model : snapshots_->list_for(who)) list.push_back(std::move(model));
        respond(json_response(http::status::ok, list));
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
    delete_snapshot_for(in.where.param("snapshot_id"), *in.who, std::move(in.respond));
}

void interpreter_api::delete_snapshot_for(const std::string& snapshot_id, const user& who,
                                          respond_fn respond) {
    if (!snapshots_) return respond(snapshots_off());
    boost::asio::post(file_pool_, [this, snapshot_id, who, respond = std::move(respond)] {
        if (auto e = snapshots_->remove_for(snapshot_id, who))
            return respond(snapshot_error_response(*e));
        respond(empty_response(http::status::no_content));
    });
}

void interpreter_api::restore_for(const std::string& snapshot_id, const user& who,
                                  respond_fn respond) {
    // As POST /v1/contexts {"from_snapshot": ID}: the default kernel's, the user's own limits.
    context_request request;
    request.from_snapshot = snapshot_id;
    if (auto why = contexts_.choose_kernel(request))
        return respond(error_response(http::status::bad_request, *why));
    restore_context(std::move(request), who, std::move(respond));
}

void interpreter_api::restore_context(context_request request, const user& sender,
                                      respond_fn respond_to) {
    if (!snapshots_) return respond_to(snapshots_off());
    restore_snapshot(
        std::move(request), sender,
        [this, who = sender.name, respond = std::move(respond_to)](
            std::shared_ptr<interpreter_context> made, http_response answer) {
            if (made) {
                auto model = nlohmann::json::parse(answer.body(), nullptr, false);
                const auto restored = model.is_object() ? model.value("restored", nlohmann::json())
                                                        : nlohmann::json();
                const auto ms =
                    restored.is_object() ? restored.value("duration_ms", std::int64_t{0}) : 0;
                count_operation("restore", ms, -1);
                audit_operation(
                    "restore", who, made->id(),
                    {{"snapshot_id",
                      restored.is_object() ? restored.value("snapshot_id", "") : std::string()},
                     {"duration_ms", ms}});
            }
            respond(std::move(answer));
        });
}

void interpreter_api::restore_snapshot(context_request request, const user& who, restore_done done,
                                       snapshot_store* store, std::string given_id) {
    if (!store) store = snapshots_.get();
    const auto started = std::chrono::steady_clock::now();
    auto respond = [done](http_response answer) { done(nullptr, std::move(answer)); };
    boost::asio::post(file_pool_, [this, request = std::move(request), who, done, respond, started,
                                   store, given_id]() mutable {
        const std::string snapshot_id = request.from_snapshot;
        // Every piece read and checked before any kernel is asked for: a damaged snapshot is
        // refused with its reason, and nothing is made of it.
        auto loaded = store->load_for(snapshot_id, who);
        if (auto* e = std::get_if<snapshot_error>(&loaded))
            return respond(snapshot_error_response(*e));
        // Its pieces' names in the store and checksums: their bytes stay on disk until they
        // are copied into the new workdir.
        auto content =
            std::make_shared<stored_snapshot>(std::move(std::get<stored_snapshot>(loaded)));
        const auto language = languages::parse_execution_language(content->language);
        if (!language || !state_is_saved(languages::dialect_of(content->language)))
            return respond(error_response(
                http::status::bad_request,
                "snapshot " + snapshot_id + " is of a " + content->language + " context"));
        // A request naming no kernel gets one that runs the snapshot's language (an R
        // snapshot is not restored into the default Python kernel).
        if (request.kernel.empty() && !request.language) {
            request.language = language;
            if (auto why = contexts_.choose_kernel(request))
                return respond(error_response(http::status::bad_request, *why));
        }
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
                if (languages::to_string(context->dialect()) != content->language)
                    return fail(http::status::bad_request,
                                "a snapshot of a " + content->language +
                                    " context is restored into a kernel that speaks " +
                                    content->language + "; this one speaks " +
                                    std::string(languages::to_string(context->dialect())));
                boost::asio::post(file_pool_, [this, context, content, snapshot_id, done, fail,
                                               started] {
                    if (auto e = place_snapshot(context->workdir(), *content))
                        return fail(static_cast<http::status>(e->http_status), e->message);
                    run_internal(
                        context,
                        *languages::state_load_code(context->dialect(), context->kernel_workdir()),
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
            },
            given_id);
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
    if (resume_first(in, &interpreter_api::fork_context)) return;
    if (!snapshots_) return in.respond(snapshots_off());
    if (!context_of(in)) return;
    std::string error;
    const auto count = parse_fork_count(in.req.body(), error);
    if (!count) return in.respond(error_response(http::status::bad_request, error));
    fork_for(in.where.param("context_id"), *in.who, *count, std::move(in.respond));
}

void interpreter_api::fork_for(const std::string& id, const user& sender, std::size_t count,
                               respond_fn respond) {
    if (resume_then(id, sender, respond,
                    [this, id, sender, count, respond] { fork_for(id, sender, count, respond); }))
        return;
    if (!snapshots_) return respond(snapshots_off());
    auto context = context_of(id, sender, respond);
    if (!context) return;
    if (count < 1 || count > max_forks)
        return respond(
            error_response(http::status::bad_request,
                           "'count' must be an integer from 1 to " + std::to_string(max_forks)));
    if (auto refused = snapshot_refusal(context)) return respond(std::move(*refused));
    const auto started = std::chrono::steady_clock::now();
    // Every copy is a new context restored from one snapshot, each in its own fresh kernel;
    // the snapshot is the fork's own and is deleted when the copies have it.
    const auto model = context->model();
    context_request request;
    request.kernel = model.value("kernel", std::string());
    request.policy = kernels::kernel_policy::fresh;
    if (auto why = contexts_.choose_kernel(request))
        return respond(error_response(http::status::bad_request, *why));
    // A copy may reach what the original may, within the ceilings as they are now (a reloaded
    // users file may have narrowed the user's since the original was made).
    if (auto n = model.find("network"); n != model.end() && n->is_object() && n->contains("allow"))
        request.network_allow = (*n)["allow"].get<std::vector<std::string>>();
    if (!request.network_allow.empty())
        if (auto why = network_refusal(request.network_allow, contexts_.settings().egress_allow,
                                       sender.egress_allow))
            return respond(error_response(http::status::forbidden, *why));
    take_snapshot(
        context, sender.name,
        [this, request, who = sender, respond, count,
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
                                // All or none: the copies made are gone from the listing
                                // before the failure's answer (removed here, not posted: a
                                // client listing its contexts on that answer finds none).
                                for (const auto& c : state->made) contexts_.remove(c, [] {});
                                return respond(std::move(*state->failure));
                            }
                            nlohmann::json contexts = nlohmann::json::array();
                            nlohmann::json ids = nlohmann::json::array();
                            for (auto& m : state->models) {
                                ids.push_back(m.value("id", std::string()));
                                contexts.push_back(std::move(m));
                            }
                            count_operation("fork", ms_since(started), snapshot.value("size", 0.0));
                            audit_operation("fork", who.name,
                                            snapshot.value("context_id", std::string()),
                                            {{"copies", ids},
                                             {"size", snapshot.value("size", std::uint64_t{0})},
                                             {"duration_ms", ms_since(started)}});
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

bool interpreter_api::resume_then(const std::string& id, const user& who, const respond_fn& respond,
                                  std::function<void()> again) {
    if (!is_paused(id, who)) return false;
    resume(id, who, [respond, again = std::move(again)](const paused_table::outcome& how) {
        if (how.status != 0) return respond(resume_failure(how));
        again();
    });
    return true;
}

void interpreter_api::live_context_for(const std::string& id, const user& who, respond_fn respond,
                                       found_fn found) {
    if (!is_paused(id, who)) {
        if (auto context = context_of(id, who, respond)) found(std::move(context), nullptr);
        return;
    }
    resume(id, who, [this, id, who, respond, found](const paused_table::outcome& how) {
        if (how.status != 0) return respond(resume_failure(how));
        auto live = contexts_.find_for(id, who);
        if (!live) return respond(no_such_context(id));
        found(std::move(live), {{"duration_ms", how.duration_ms}});
    });
}

bool interpreter_api::resume_first(incoming_request& in,
                                   void (interpreter_api::*again)(incoming_request)) {
    const std::string id = in.where.param("context_id");
    if (!is_paused(id, *in.who)) return false;
    auto held = std::make_shared<incoming_request>(std::move(in));
    resume(id, *held->who, [this, held, again](const paused_table::outcome& how) {
        if (how.status != 0) return held->respond(resume_failure(how));
        (this->*again)(std::move(*held));
    });
    return true;
}

void interpreter_api::pause(const std::shared_ptr<interpreter_context>& context,
                            const std::string& by, std::string trigger, pause_done done) {
    auto refuse = [&done](http::status status, std::string why) {
        done(error_response(status, std::move(why)));
    };
    if (!paused_states_)
        return refuse(http::status::not_found, "contexts are not paused by this server");
    if (!state_is_saved(context->dialect()))
        return refuse(http::status::bad_request,
                      "only Python and R contexts can be paused (their state is what a snapshot "
                      "saves); this one's kernel speaks " +
                          std::string(languages::to_string(context->dialect())));
    const auto& options = context->options();
    if (options.one_shot || options.via_mcp || options.via_e2b)
        return refuse(http::status::conflict, std::string("this context belongs to ") +
                                                  (options.one_shot  ? "a one-shot execution"
                                                   : options.via_mcp ? "an MCP session"
                                                                     : "an E2B sandbox") +
                                                  ", which finds it live; it is not paused");
    if (context->busy())
        return refuse(http::status::conflict,
                      "the context is busy: an execution is queued or running; pause it when it "
                      "is idle");
    const auto started = std::chrono::steady_clock::now();
    const auto model = context->model();
    paused_record record;
    record.id = context->id();
    record.owner = context->owner();
    record.kernel = model.value("kernel", std::string());
    record.policy = options.policy;
    record.created_at = model.value("created_at", std::string());
    if (auto n = model.find("network"); n != model.end() && n->is_object() && n->contains("allow"))
        record.network_allow = (*n)["allow"].get<std::vector<std::string>>();
    take_snapshot(
        context, context->owner(),
        [this, context, record, by, trigger, started,
         done](std::variant<nlohmann::json, snapshot_error> r) mutable {
            if (auto* e = std::get_if<snapshot_error>(&r))
                return done(error_response(static_cast<http::status>(e->http_status),
                                           "the context was not paused: " + e->message));
            const auto snapshot = std::get<nlohmann::json>(std::move(r));
            record.snapshot_id = snapshot["id"].get<std::string>();
            record.paused_at = kernelproto::format_iso_time(std::chrono::system_clock::now());
            if (auto why = contexts_.pause(context, record); !why.empty()) {
                // Nothing changed: the context is live as it was, and its pause snapshot goes.
                boost::asio::post(file_pool_, [this, record] {
                    (void)paused_states_->remove_for(record.snapshot_id, user{record.owner});
                });
                return done(error_response(http::status::conflict, why));
            }
            const auto ms = ms_since(started);
            if (auto* m = contexts_.settings().metrics) {
                m->context_pauses.with({trigger}).inc();
                m->context_pause_seconds.get().observe(static_cast<double>(ms) / 1000.0);
                m->snapshot_bytes.with({"pause"}).observe(snapshot.value("size", 0.0));
            }
            const nlohmann::json details = {{"trigger", trigger},
                                            {"snapshot_id", record.snapshot_id},
                                            {"size", snapshot.value("size", std::uint64_t{0})},
                                            {"duration_ms", ms},
                                            {"not_carried", snapshot["not_carried"]}};
            audit_operation("pause", by, record.id, details);
            auto answer = paused_model(contexts_, {record, false});
            answer["paused"] = {{"duration_ms", ms},
                                {"size", snapshot.value("size", std::uint64_t{0})},
                                {"carried", snapshot["carried"]},
                                {"not_carried", snapshot["not_carried"]}};
            done(std::move(answer));
        },
        paused_states_.get());
}

void interpreter_api::pause_context(incoming_request in) {
    pause_for(in.where.param("context_id"), *in.who, std::move(in.respond));
}

void interpreter_api::pause_for(const std::string& id, const user& who, respond_fn respond) {
    // Idempotent: pausing a paused context answers its model, as it is.
    if (auto p = is_valid_kernel_id(id) ? contexts_.paused_for(id, who) : std::nullopt)
        return respond(json_response(http::status::ok, paused_model(contexts_, *p)));
    auto context = context_of(id, who, respond);
    if (!context) return;
    pause(context, who.name, "request", [respond](std::variant<nlohmann::json, http_response> r) {
        if (auto* res = std::get_if<http_response>(&r)) return respond(std::move(*res));
        respond(json_response(http::status::ok, std::get<nlohmann::json>(r)));
    });
}

void interpreter_api::resume_context(incoming_request in) {
    resume_for(in.where.param("context_id"), *in.who, std::move(in.respond));
}

void interpreter_api::resume_for(const std::string& id, const user& sender, respond_fn respond) {
    if (!is_paused(id, sender)) {
        // A live context is resumed already: its model, with nothing to report.
        if (auto context = context_of(id, sender, respond))
            respond(json_response(http::status::ok, context->model()));
        return;
    }
    resume(id, sender, [this, id, who = sender, respond](const paused_table::outcome& how) {
        if (how.status != 0) return respond(resume_failure(how));
        const auto ms = how.duration_ms;
        auto context = contexts_.find_for(id, who);
        if (!context) return respond(no_such_context(id));
        auto model = context->model();
        model["resumed"] = {{"duration_ms", ms}};
        respond(json_response(http::status::ok, model));
    });
}

void interpreter_api::resume(const std::string& id, const user& who, resume_done done) {
    paused_record record;
    const auto started = std::chrono::steady_clock::now();
    const auto how = contexts_.start_resume(id, who, done, &record);
    if (how == paused_table::resume_start::unknown) {
        // Resumed by another request in between: live, nothing to wait for.
        if (contexts_.find_for(id, who)) return done({});
        return done({404, "Context does not exist: " + id, {}, 0});
    }
    if (how == paused_table::resume_start::joined) return;  // told when the one running ends
    // Its owner's limits apply to the kernel it resumes into, whoever asked (an admin).
    const user owner = who.name == record.owner ? who : user{record.owner};
    context_request request;
    request.kernel = record.kernel;
    request.policy = record.policy;
    request.network_allow = record.network_allow;
    request.from_snapshot = record.snapshot_id;
    auto finish = [this, id, record, started, owner](
                      const std::shared_ptr<interpreter_context>& made, int status,
                      const std::string& why, std::string retry_after) {
        const auto ms = ms_since(started);
        if (made) {
            if (auto* m = contexts_.settings().metrics) {
                m->context_resumes.with({"ok"}).inc();
                m->context_resume_seconds.get().observe(static_cast<double>(ms) / 1000.0);
            }
            audit_operation("resume", owner.name, id,
                            {{"snapshot_id", record.snapshot_id}, {"duration_ms", ms}});
            // The context is live again: its pause snapshot has served.
            boost::asio::post(file_pool_, [this, record] {
                (void)paused_states_->remove_for(record.snapshot_id, user{record.owner});
            });
        } else if (auto* m = contexts_.settings().metrics) {
            m->context_resumes.with({"failed"}).inc();
        }
        paused_table::outcome result;
        result.duration_ms = ms;
        if (!made) {
            result.status = status;
            result.error = "the context could not be resumed (it stays paused): " + why;
            result.retry_after = std::move(retry_after);
        }
        contexts_.finish_resume(id, made, result);
    };
    // Within the server's egress ceiling as it is now (a reload may have narrowed it).
    if (!request.network_allow.empty())
        if (auto why = network_refusal(request.network_allow, contexts_.settings().egress_allow,
                                       owner.egress_allow))
            return finish(nullptr, 403, *why, {});
    restore_snapshot(
        std::move(request), owner,
        [finish](std::shared_ptr<interpreter_context> made, http_response answer) {
            if (made) return finish(made, 0, {}, {});
            auto body = nlohmann::json::parse(answer.body(), nullptr, false);
            const std::string why =
                body.is_object() ? body.value("message", std::string()) : std::string();
            // A limit's answer says when to try again; the resume's says the same.
            finish(nullptr, static_cast<int>(answer.result_int()),
                   why.empty() ? std::string(answer.reason()) : why,
                   std::string(answer[http::field::retry_after]));
        },
        paused_states_.get(), id);
}

http_response interpreter_api::resume_failure(const paused_table::outcome& how) {
    auto res = error_response(static_cast<http::status>(how.status), how.error);
    if (!how.retry_after.empty()) res.set(http::field::retry_after, how.retry_after);
    return res;
}

void interpreter_api::start() {
    if (paused_states_) {
        // Runs before the server answers anyone: blocking reads are fine here.
        std::set<std::string> kept;
        for (const auto& snapshot_id : contexts_.restore_paused([this](const paused_record& r) {
                 return std::holds_alternative<nlohmann::json>(
                     paused_states_->get_for(r.snapshot_id, user{r.owner}));
             }))
            kept.insert(snapshot_id);
        // A pause a crash cut short, a record lost or dropped: its snapshot (whole or not) is
        // no one's to resume.
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(paused_states_->dir(), ec)) {
            const auto name = entry.path().filename().string();
            if (snapshot_store::valid_id(name) && !kept.contains(name)) {
                contexts_.log().info("paused snapshot " + name +
                                     " removed: no paused context "
                                     "names it");
                std::filesystem::remove_all(entry.path(), ec);
            }
        }
    }
    if (contexts_.settings().pause_idle.count() > 0 && paused_states_)
        sweep_periodically(idle_timer_, contexts_.settings().pause_idle,
                           &interpreter_api::pause_idle_contexts);
    if (contexts_.settings().paused_ttl.count() > 0 && paused_states_) {
        // Those that expired while no gateway ran go before anyone can resume them.
        expire_paused();
        sweep_periodically(expiry_timer_, contexts_.settings().paused_ttl,
                           &interpreter_api::expire_paused);
    }
}

void interpreter_api::stop() {
    stopped_ = true;
    boost::asio::post(idle_timer_.get_executor(), [this] {
        idle_timer_.cancel();
        expiry_timer_.cancel();
    });
}

// A context is paused, or expires, at most a quarter of its period late, and never more than a
// minute: the sweep runs that often until stop().
void interpreter_api::sweep_periodically(boost::asio::steady_timer& timer,
                                         std::chrono::seconds period,
                                         void (interpreter_api::*sweep)()) {
    if (stopped_) return;
    timer.expires_after(std::clamp<std::chrono::seconds>(period / 4, std::chrono::seconds(1),
                                                         std::chrono::seconds(60)));
    timer.async_wait([this, &timer, period, sweep](boost::system::error_code ec) {
        if (ec || stopped_) return;
        (this->*sweep)();
        sweep_periodically(timer, period, sweep);
    });
}

void interpreter_api::expire_paused() {
    const auto ttl = contexts_.settings().paused_ttl;
    for (const auto& record : contexts_.remove_expired(std::chrono::system_clock::now())) {
        contexts_.log().info("paused context " + record.id + " of " + record.owner +
                             " deleted: paused since " + record.paused_at +
                             ", longer than --paused-ttl (" + std::to_string(ttl.count()) + " s)");
        if (auto* m = contexts_.settings().metrics) m->paused_expiries.get().inc();
        audit_operation("expire", "", record.id,
                        {{"snapshot_id", record.snapshot_id},
                         {"owner", record.owner},
                         {"paused_at", record.paused_at},
                         {"ttl_seconds", ttl.count()}});
        boost::asio::post(file_pool_, [this, record] {
            (void)paused_states_->remove_for(record.snapshot_id, user{record.owner});
        });
    }
}

void interpreter_api::pause_idle_contexts() {
    const auto now = kernels::wall_clock::now();
    const auto limit = contexts_.settings().pause_idle;
    for (const auto& context : contexts_.list_for(user{"", true})) {
        const auto& o = context->options();
        if (o.one_shot || o.via_mcp || o.via_e2b || context->busy() ||
            !state_is_saved(context->dialect()))
            continue;
        const auto activity = context->kernel()->activity();
        if (activity.execution_state != "idle" || now - activity.last_activity < limit) continue;
        pause(
            context, "", "idle",
            [this, id = context->id()](std::variant<nlohmann::json, http_response> r) {
                if (auto* res = std::get_if<http_response>(&r))
                    contexts_.log().info("idle context " + id + " was not paused: " + res->body());
            });
    }
}

void interpreter_api::count_operation(const char* operation, std::int64_t ms, double bytes) const {
    auto* m = contexts_.settings().metrics;
    if (!m) return;
    m->snapshot_operations.with({operation}).inc();
    m->snapshot_seconds.with({operation}).observe(static_cast<double>(ms) / 1000.0);
    if (bytes >= 0) m->snapshot_bytes.with({operation}).observe(bytes);
}

void interpreter_api::audit_operation(const std::string& operation, const std::string& who,
                                      const std::string& context_id,
                                      const nlohmann::json& details) const {
    auto* log = contexts_.settings().audit;
    if (!log) return;
    audit::context_operation op;
    op.time = std::chrono::system_clock::now();
    op.operation = operation;
    op.user = who;
    op.context_id = context_id;
    op.details = details;
    if (auto why = log->record_operation(op); !why.empty())
        contexts_.log().warn("the audit log did not take the " + operation + " of context " +
                             context_id + ": " + why);
}

}  // namespace callisto::gateway::interpreter
