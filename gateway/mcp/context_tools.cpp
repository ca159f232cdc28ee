#include "gateway/mcp/context_tools.hpp"

#include "gateway/interpreter/workdir_files.hpp"
#include "gateway/mcp/tool_content.hpp"

static_assert(callisto::gateway::mcp::max_tool_forks ==
                  callisto::gateway::interpreter::interpreter_api::max_forks,
              "fork_context offers what POST /v1/contexts/{id}/fork allows");

namespace callisto::gateway::mcp {

using interpreter::interpreter_context;

namespace {

nlohmann::json file_error_result(const interpreter::file_error& e) {
    return text_tool_result(e.message, true);
}

// "Python", "R": how a model knows the kernel (else its kernelspec's name).
std::string kernel_label(const interpreter_context& c) {
    switch (c.dialect()) {
        case languages::kernel_dialect::python: return "Python";
        case languages::kernel_dialect::r: return "R";
        case languages::kernel_dialect::other: break;
    }
    return c.kernel()->kernelspec_name();
}

tool_language language_of(const tool_call& call) {
    return std::visit(
        [](const auto& args) -> tool_language {
            if constexpr (requires { args.language; })
                return args.language;
            else
                return std::nullopt;
        },
        call);
}

// The interpreter's answer, as the tool's result.
respond_fn answer_as(std::string tool, std::function<void(nlohmann::json)> done) {
    return [tool = std::move(tool), done = std::move(done)](http_response res) {
        const auto body = res.body().empty() ? nlohmann::json()
                                             : nlohmann::json::parse(res.body(), nullptr, false);
        done(operation_tool_result(tool, static_cast<int>(res.result_int()), body));
    };
}

// Said before a result whose context was paused and came back for it.
std::function<void(nlohmann::json)> with_resume_notice(const nlohmann::json& resumed,
                                                       const std::string& id,
                                                       std::function<void(nlohmann::json)> done) {
    if (resumed.is_null()) return done;
    const std::string notice = "[callisto] context " + id + " was paused; it was resumed in " +
                               std::to_string(resumed.value("duration_ms", std::int64_t{0})) +
                               " ms, with its state.";
    return [notice, done = std::move(done)](nlohmann::json result) {
        result["content"].insert(result["content"].begin(),
                                 nlohmann::json{{"type", "text"}, {"text", notice}});
        done(std::move(result));
    };
}

}  // namespace

context_tools::context_tools(interpreter::context_registry& contexts,
                             interpreter::interpreter_api& api, user owner,
                             std::size_t max_read_bytes, logger log)
    : contexts_(contexts),
      api_(api),
      owner_(std::move(owner)),
      max_read_bytes_(max_read_bytes),
      log_(std::move(log)) {}

void context_tools::call(const std::string& call_id, tool_call call,
                         std::function<void(nlohmann::json)> done) {
    if (std::holds_alternative<run_code_args>(call)) {
        std::lock_guard lock(mutex_);
        calls_[call_id] = {};
    }
    if (call_by_id(call_id, call, done)) return;
    const auto language = language_of(call);
    with_context(language, [self = shared_from_this(), call_id, call = std::move(call),
                            done = std::move(done)](context_ptr c, std::string error) mutable {
        if (!c) {
            self->forget_call(call_id);
            return done(text_tool_result(error, true));
        }
        std::string notice;
        {
            std::lock_guard lock(self->mutex_);
            notice.swap(self->notice_);
        }
        if (!notice.empty())
            done = [notice, done = std::move(done)](nlohmann::json result) {
                result["content"].insert(result["content"].begin(),
                                         nlohmann::json{{"type", "text"}, {"text", notice}});
                done(std::move(result));
            };
        self->carry_out(c, call_id, call, std::move(done));
    });
}

void context_tools::carry_out(const context_ptr& c, const std::string& call_id,
                              const tool_call& call, std::function<void(nlohmann::json)> done) {
    std::visit(
        [&](const auto& args) {
            using T = std::decay_t<decltype(args)>;
            if constexpr (std::is_same_v<T, run_code_args>)
                run_code(c, call_id, args, std::move(done));
            else if constexpr (std::is_same_v<T, restart_context_args>)
                restart(c, std::move(done));
            else if constexpr (std::is_same_v<T, upload_file_args>)
                done(upload(c, args));
            else if constexpr (std::is_same_v<T, list_files_args>)
                done(list(c, args));
            else if constexpr (std::is_same_v<T, read_file_args>)
                done(read(c, args));
            else if constexpr (std::is_same_v<T, snapshot_context_args>)
                api_.snapshot_for(c->id(), owner_, answer_as("snapshot_context", std::move(done)));
            else if constexpr (std::is_same_v<T, fork_context_args>)
                api_.fork_for(c->id(), owner_, args.count,
                              answer_as("fork_context", std::move(done)));
            else  // the others went by id (call_by_id)
                done(text_tool_result("this tool needs no context of the session", true));
        },
        call);
}

bool context_tools::call_by_id(const std::string& call_id, const tool_call& call,
                               const std::function<void(nlohmann::json)>& done) {
    return std::visit(
        [&](const auto& a) -> bool {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, run_code_args> || std::is_same_v<T, upload_file_args> ||
                          std::is_same_v<T, list_files_args> || std::is_same_v<T, read_file_args> ||
                          std::is_same_v<T, restart_context_args>) {
                if (a.context_id.empty()) return false;
                // One of the user's contexts, as /v1 finds it (resumed first when paused).
                api_.live_context_for(
                    a.context_id, owner_,
                    [self = shared_from_this(), call_id, done,
                     tool = std::string(T::tool)](http_response res) {
                        self->forget_call(call_id);
                        answer_as(tool, done)(std::move(res));
                    },
                    [self = shared_from_this(), call_id, call, done](context_ptr c,
                                                                     nlohmann::json resumed) {
                        self->carry_out(c, call_id, call,
                                        with_resume_notice(resumed, c->id(), std::move(done)));
                    });
                return true;
            } else if constexpr (std::is_same_v<T, snapshot_context_args>) {
                if (a.context_id.empty()) return false;
                api_.snapshot_for(a.context_id, owner_, answer_as("snapshot_context", done));
                return true;
            } else if constexpr (std::is_same_v<T, fork_context_args>) {
                if (a.context_id.empty()) return false;
                api_.fork_for(a.context_id, owner_, a.count, answer_as("fork_context", done));
                return true;
            } else if constexpr (std::is_same_v<T, list_snapshots_args>) {
                api_.list_snapshots_for(owner_, answer_as("list_snapshots", done));
                return true;
            } else if constexpr (std::is_same_v<T, delete_snapshot_args>) {
                api_.delete_snapshot_for(a.snapshot_id, owner_, answer_as("delete_snapshot", done));
                return true;
            } else if constexpr (std::is_same_v<T, restore_snapshot_args>) {
                api_.restore_for(a.snapshot_id, owner_, answer_as("restore_snapshot", done));
                return true;
            } else if constexpr (std::is_same_v<T, pause_context_args>) {
                api_.pause_for(a.context_id, owner_, answer_as("pause_context", done));
                return true;
            } else if constexpr (std::is_same_v<T, resume_context_args>) {
                api_.resume_for(a.context_id, owner_, answer_as("resume_context", done));
                return true;
            } else {
                return false;
            }
        },
        call);
}

void context_tools::with_context(const tool_language& language, context_fn fn) {
    // bash and sql run in the default kernel when it is Python, as python does.
    interpreter::context_request request;
    request.language = language;
    if (auto why = contexts_.choose_kernel(request)) return fn(nullptr, *why);
    const std::string kernel = request.kernel.empty() ? contexts_.default_kernel() : request.kernel;
    context_ptr stale;
    {
        std::unique_lock lock(mutex_);
        if (closed_) {
            lock.unlock();
            return fn(nullptr, "the MCP session has ended");
        }
        auto& slot = contexts_by_kernel_[kernel];
        if (slot.context && slot.context->kernel()->state() == kernels::kernel_state::gone) {
            stale = std::move(slot.context);
            slot.context.reset();
            notice_ = "[callisto] this session's previous " + kernel_label(*stale) +
                      " kernel is gone (" +
                      stale->kernel()->model().value("reason", std::string("shut down")) +
                      "); a new one was started: variables and files from earlier calls are lost.";
        }
        if (slot.context) {
            auto c = slot.context;
            lock.unlock();
            return fn(c, {});
        }
        slot.waiting.push_back(std::move(fn));
        if (slot.creating) return;
        slot.creating = true;
    }
    if (stale) {
        log_.info("context " + stale->id() + " lost its kernel; replacing it");
        contexts_.remove(stale, [] {});
    }
    request.language.reset();
    request.kernel = kernel;
    request.via_mcp = true;
    contexts_.create(request, owner_,
                     [self = shared_from_this(), kernel](interpreter::create_context_result r) {
                         self->on_created(kernel, std::move(r));
                     });
}

void context_tools::on_created(const std::string& kernel, interpreter::create_context_result r) {
    std::vector<context_fn> waiting;
    bool orphan = false;
    {
        std::lock_guard lock(mutex_);
        auto& slot = contexts_by_kernel_[kernel];
        slot.creating = false;
        waiting.swap(slot.waiting);
        if (r.context) {
            if (closed_)
                orphan = true;  // the session ended while its kernel started
            else
                slot.context = r.context;
        }
    }
    if (orphan) {
        contexts_.remove(r.context, [] {});
        for (auto& fn : waiting) fn(nullptr, "the MCP session has ended");
        return;
    }
    if (r.context)
        log_.info("context " + r.context->id() + " (" + kernel + ") for the MCP session");
    const std::string error =
        r.context ? std::string()
                  : "could not start a " + kernel + " kernel for this session: " + r.message;
    for (auto& fn : waiting) fn(r.context, error);
}

void context_tools::close() {
    std::vector<context_ptr> contexts;
    {
        std::lock_guard lock(mutex_);
        if (closed_) return;
        closed_ = true;
        for (auto& [kernel, slot] : contexts_by_kernel_)
            if (slot.context) contexts.push_back(std::move(slot.context));
    }
    // A creation in flight is cleaned up in on_created.
    for (auto& c : contexts) contexts_.remove(c, [] {});
}

void context_tools::run_code(const context_ptr& c, const std::string& call_id,
                             const run_code_args& a, std::function<void(nlohmann::json)> done) {
    interpreter::execution_request request;
    request.api = "mcp";
    request.code = a.code;
    request.timeout = a.timeout;
    request.language = a.language;
    if (a.output_budget > 0) request.output_budget = a.output_budget;
    c->submit(std::move(request), [self = shared_from_this(), c, call_id,
                                   done = std::move(done)](interpreter_context::submit_result r) {
        if (r.outcome == interpreter_context::submit_outcome::queue_full) {
            self->forget_call(call_id);
            return done(text_tool_result(
                "too many run_code calls are waiting in this session; wait for one to finish",
                true));
        }
        if (r.outcome == interpreter_context::submit_outcome::refused) {
            self->forget_call(call_id);
            return done(text_tool_result(r.why, true));
        }
        if (!r.exec) {
            self->forget_call(call_id);
            return done(text_tool_result("the session's context is closed", true));
        }
        self->on_submitted(c, call_id, r.exec->id());
        r.exec->subscribe([self, call_id, done](const nlohmann::json& event, bool last) {
            if (!last) return;
            self->forget_call(call_id);
            done(execution_tool_result(event["execution"]));
        });
    });
}

void context_tools::on_submitted(const context_ptr& c, const std::string& call_id,
                                 const std::string& execution_id) {
    bool cancelled = false;
    {
        std::lock_guard lock(mutex_);
        auto it = calls_.find(call_id);
        if (it == calls_.end()) return;
        it->second.context = c;
        it->second.execution_id = execution_id;
        cancelled = it->second.cancelled;
    }
    // Cancelled before the context had it: stop it now (it is cancelled while queued).
    if (cancelled) c->interrupt(execution_id, [](auto) {});
}

void context_tools::cancel(const std::string& call_id) {
    context_ptr c;
    std::string execution_id;
    {
        std::lock_guard lock(mutex_);
        auto it = calls_.find(call_id);
        if (it == calls_.end()) return;
        it->second.cancelled = true;
        execution_id = it->second.execution_id;
        c = it->second.context;
    }
    if (c && !execution_id.empty()) {
        log_.info("run_code call " + call_id + " cancelled by the client; interrupting");
        c->interrupt(execution_id, [](auto) {});
    }
}

void context_tools::forget_call(const std::string& call_id) {
    std::lock_guard lock(mutex_);
    calls_.erase(call_id);
}

void context_tools::restart(const context_ptr& c, std::function<void(nlohmann::json)> done) {
    c->restart([done = std::move(done)](std::string error) {
        if (!error.empty()) return done(text_tool_result("the restart failed: " + error, true));
        done(text_tool_result(
            "the kernel restarted: variables and imports are gone, files in the working "
            "directory are kept"));
    });
}

nlohmann::json context_tools::upload(const context_ptr& c, const upload_file_args& a) const {
    interpreter::workdir_files files(c->workdir());
    if (auto e = files.write(a.path, a.bytes)) return file_error_result(*e);
    return text_tool_result("wrote " + a.path + " (" + std::to_string(a.bytes.size()) +
                            " bytes) in the working directory");
}

nlohmann::json context_tools::list(const context_ptr& c, const list_files_args& a) const {
    interpreter::workdir_files files(c->workdir());
    nlohmann::json entries;
    bool truncated = false;
    if (auto e =
            files.list(entries, contexts_.settings().max_listed_files, a.include_hidden, truncated))
        return file_error_result(*e);
    return file_list_tool_result(entries, truncated);
}

nlohmann::json context_tools::read(const context_ptr& c, const read_file_args& a) const {
    interpreter::workdir_files files(c->workdir());
    std::string bytes;
    if (auto e = files.read(a.path, bytes, max_read_bytes_)) {
        if (e->http_status == 413)
            return text_tool_result(e->message + "; MCP returns files up to " +
                                        std::to_string(max_read_bytes_) +
                                        " bytes: read a part of it with run_code instead",
                                    true);
        return file_error_result(*e);
    }
    return file_tool_result(a.path, bytes);
}

}  // namespace callisto::gateway::mcp
