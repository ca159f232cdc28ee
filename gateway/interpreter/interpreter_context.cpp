#include "gateway/interpreter/interpreter_context.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>

#include "common/unique_fd.hpp"
#include "gateway/interpreter/execution_metrics.hpp"
#include "gateway/interpreter/gateway_execute_request.hpp"
#include "gateway/interpreter/result_descriptions.hpp"
#include "gateway/kernels/session/server_status.hpp"
#include "gateway/languages/execution_language.hpp"
#include "kernelproto/ids.hpp"
#include "kernelproto/iso_time.hpp"
#include "kernelproto/untrusted_json.hpp"
#include "kernelproto/websocket_format.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"

namespace callisto::gateway::interpreter {

namespace asio = boost::asio;
using kernelproto::channel;

namespace {

// Writes bytes to workdir/subdir/name, never following a link the kernel planted (each step
// opened with O_NOFOLLOW relative to the last) nor overwriting (O_EXCL), and owned like the
// workdir: the kernel's own user must be able to delete it (a kept kernel's reset empties the
// workdir as that user). False on any failure.
bool write_new_file(const std::filesystem::path& workdir, const char* subdir,
                    const std::string& name, const std::string& bytes) {
    unique_fd root(::open(workdir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!root || ::fstat(root.get(), &st) != 0) return false;
    if (::mkdirat(root.get(), subdir, 0755) == 0) {
        unique_fd made(
            ::openat(root.get(), subdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!made || ::fchown(made.get(), st.st_uid, st.st_gid) != 0) return false;
    } else if (errno != EEXIST) {
        return false;
    }
    unique_fd dir(::openat(root.get(), subdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return false;
    unique_fd fd(::openat(dir.get(), name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd) return false;
    bool ok = ::fchown(fd.get(), st.st_uid, st.st_gid) == 0;
    for (std::size_t done = 0; ok && done < bytes.size();) {
        ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
        ok = n > 0;
        if (ok) done += static_cast<std::size_t>(n);
    }
    if (!ok) ::unlinkat(dir.get(), name.c_str(), 0);
    return ok;
}

}  // namespace

interpreter_context::interpreter_context(asio::io_context& ioc, std::string id, std::string owner,
                                         std::shared_ptr<kernels::kernel_session> kernel,
                                         std::filesystem::path workdir, bool chdir_kernel,
                                         context_options options,
                                         const interpreter_settings& settings, logger log)
    : id_(std::move(id)),
      owner_(std::move(owner)),
      kernel_(std::move(kernel)),
      workdir_(std::move(workdir)),
      chdir_kernel_(chdir_kernel),
      dialect_(languages::dialect_of(kernel_->language())),
      options_(options),
      settings_(settings),
      session_id_(kernelproto::new_uuid()),
      created_at_(std::chrono::system_clock::now()),
      log_(std::move(log)),
      strand_(asio::make_strand(ioc)),
      deadline_timer_(strand_),
      grace_timer_(strand_) {}

nlohmann::json interpreter_context::model() const {
    auto k = kernel_->model();
    return {{"id", id_},
            {"owner", owner_},
            {"kernel_id", kernel_->id()},
            {"kernel", kernel_->kernelspec_name()},
            {"languages", languages::language_names(languages::languages_run_by(dialect_))},
            {"state", k.value("execution_state", "unknown")},
            {"created_at", kernelproto::format_iso_time(created_at_)},
            {"policy", to_string(options_.policy)},
            {"one_shot", options_.one_shot},
            {"kernel_uses", options_.kernel_uses},
            {"queued", waiting_.load()},
            {"running", running_.load()},
            {"network", {{"allow", kernel_->egress().allow}}}};
}

void interpreter_context::open() {
    asio::post(strand_, [self = shared_from_this()] {
        self->kernel_->attach(self);
        self->kernel_->hold(
            self->options_.via_mcp ? kernels::kernel_holder::mcp : kernels::kernel_holder::context,
            self->id_);
        self->send_chdir();
        self->save_record();
    });
}

void interpreter_context::restore(const context_record& record) {
    if (auto t = kernelproto::parse_iso_time(record.created_at)) created_at_ = *t;
    for (const auto& saved : record.executions) {
        auto e = execution::restored(saved, id_);
        executions_[e->id()] = e;
        if (!e->request().idempotency_key.empty()) keys_[e->request().idempotency_key] = e->id();
        remember(e);
    }
}

void interpreter_context::save_record() const {
    if (!settings_.context_records || options_.one_shot || closed_) return;
    context_record r;
    r.id = id_;
    r.owner = owner_;
    r.kernel_id = kernel_->id();
    r.policy = options_.policy;
    r.kernel_uses = options_.kernel_uses;
    r.workdir = workdir_;
    r.chdir_kernel = chdir_kernel_;
    r.via_e2b = options_.via_e2b;
    r.start_dir = options_.start_dir;
    r.home = options_.home;
    r.shares_files_of = options_.shares_files_of;
    r.created_at = kernelproto::format_iso_time(created_at_);
    // The latest finished ones only: the record is rewritten as each execution is queued,
    // starts and ends, on this strand.
    constexpr std::size_t recorded_finished = 16;
    const auto skip =
        finished_order_.size() > recorded_finished ? finished_order_.size() - recorded_finished : 0;
    try {
        for (auto id = finished_order_.begin() + static_cast<std::ptrdiff_t>(skip);
             id != finished_order_.end(); ++id)
            if (auto it = executions_.find(*id); it != executions_.end())
                r.executions.push_back(it->second->to_record());
        if (current_) r.executions.push_back(current_->to_record());
        for (const auto& e : queue_) r.executions.push_back(e->to_record());
    } catch (const std::exception& e) {
        log_.warn(std::string("context record not written: ") + e.what());
        return;
    }
    // A failure is the store's to log and count: the context runs on, unrecorded.
    static_cast<void>(settings_.context_records->save(r));
}

void interpreter_context::close(std::string reason) {
    asio::post(strand_, [self = shared_from_this(), reason = std::move(reason)] {
        if (self->closed_) return;
        self->kernel_->detach(self.get());
        self->close_from_kernel_now(reason);
    });
}

std::optional<std::string> interpreter_context::refusal(const execution_request& request) const {
    const auto runs = languages::languages_run_by(dialect_);
    const std::string kernel = "this context's kernel (" + kernel_->kernelspec_name() + ")";
    if (request.language && std::find(runs.begin(), runs.end(), *request.language) == runs.end()) {
        std::string can;
        for (const auto& name : languages::language_names(runs))
            can += (can.empty() ? "" : ", ") + name;
        return kernel + " does not run " + std::string(languages::to_string(*request.language)) +
               (can.empty() ? std::string(": it runs only its own code, with no 'language'")
                            : "; it runs " + can) +
               ". GET /v1/languages says which kernel runs which language";
    }
    if (!request.env.empty() && !languages::env_apply_code(dialect_, request.env))
        return kernel + " is not a Python or R kernel: 'env' cannot be set in it";
    return std::nullopt;
}

std::string interpreter_context::kernel_workdir() const {
    return chdir_kernel_ ? workdir_.string() : std::string(launcher::sandbox_workdir);
}

void interpreter_context::send_chdir() {
    if (!options_.home.empty())
        if (auto code = languages::home_code(dialect_, options_.home))
            send_silent(std::move(*code));
    // An unsandboxed kernel goes to the context's directory on the host; a sandboxed one to
    // its start directory, when it has one.
    const std::string dir = chdir_kernel_ ? workdir_.string() : options_.start_dir;
    if (dir.empty()) return;
    if (auto code = languages::chdir_code(dialect_, dir))
        send_silent(std::move(*code));
    else
        log_.warn(
            "the kernel's language has no way to change directory; it stays where it "
            "started");
}

void interpreter_context::send_silent(std::string code) {
    // Silent and outside the history: execution_count stays the user's, and nothing of it
    // reaches an execution (its replies have their own parent).
    kernel_->submit(weak_from_this(), channel::shell,
                    gateway_execute_request(std::move(code), /*silent=*/true,
                                            /*store_history=*/false, session_id_));
}

void interpreter_context::submit(execution_request request,
                                 std::function<void(submit_result)> done) {
    asio::post(strand_, [self = shared_from_this(), request = std::move(request),
                         done = std::move(done)]() mutable {
        if (!request.idempotency_key.empty()) {
            auto it = self->keys_.find(request.idempotency_key);
            if (it != self->keys_.end()) {
                if (auto e = self->executions_.find(it->second); e != self->executions_.end())
                    return done({submit_outcome::repeated, e->second, {}});
            }
        }
        if (self->closed_) return done({submit_outcome::closed, nullptr, {}});
        if (auto why = self->refusal(request))
            return done({submit_outcome::refused, nullptr, std::move(*why)});
        if (self->queue_.size() >= self->settings_.queue_limit)
            return done({submit_outcome::queue_full, nullptr, {}});
        const std::size_t budget =
            std::min(request.output_budget.value_or(self->settings_.text_budget_bytes),
                     self->settings_.text_budget_bytes);
        auto e = std::make_shared<execution>(kernelproto::new_uuid(), self->id_, std::move(request),
                                             budget);
        self->executions_[e->id()] = e;
        if (!e->request().idempotency_key.empty())
            self->keys_[e->request().idempotency_key] = e->id();
        if (self->settings_.metrics)
            e->subscribe(count_when_finished(*self->settings_.metrics, e->request().api));
        self->queue_.push_back(e);
        self->waiting_ = self->queue_.size();
        // Recorded before it is answered: a restart from now on reports it, never loses it.
        // Answered before it starts: the answer subscribes to its events, "start" included.
        self->save_record();
        done({submit_outcome::accepted, e, {}});
        if (!self->current_) self->start_next();
    });
}

void interpreter_context::find(const std::string& execution_id,
                               std::function<void(std::shared_ptr<execution>)> done) {
    asio::post(strand_, [self = shared_from_this(), execution_id, done = std::move(done)] {
        auto it = self->executions_.find(execution_id);
        done(it == self->executions_.end() ? nullptr : it->second);
    });
}

void interpreter_context::list(std::function<void(nlohmann::json)> done) {
    asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
        nlohmann::json out = nlohmann::json::array();
        for (auto& [id, e] : self->executions_) out.push_back(e->summary());
        done(std::move(out));
    });
}

void interpreter_context::interrupt(const std::string& execution_id,
                                    std::function<void(std::shared_ptr<execution>)> done) {
    asio::post(strand_, [self = shared_from_this(), execution_id, done = std::move(done)] {
        auto it = self->executions_.find(execution_id);
        if (it == self->executions_.end()) return done(nullptr);
        auto e = it->second;
        if (e == self->current_) {
            if (self->ladder_ == ladder::none) self->begin_interrupt(ladder::client_interrupt);
        } else if (!e->finished()) {
            std::erase(self->queue_, e);
            self->waiting_ = self->queue_.size();
            e->finish(execution_status::interrupted, true);  // never ran
            self->remember(e);
            self->save_record();
        }
        done(e);
    });
}

void interpreter_context::restart(std::function<void(std::string)> done) {
    asio::post(strand_, [self = shared_from_this(), done = std::move(done)]() mutable {
        if (self->current_) {
            self->ladder_ = ladder::restarting;
            self->deadline_timer_.cancel();
            self->grace_timer_.cancel();
        }
        self->runners_loaded_.clear();
        self->kernel_->restart([self, done = std::move(done)](kernels::kernel_outcome r) mutable {
            // The context's own callers take "" for success.
            std::string error = r.ok() ? std::string() : r.message;
            asio::post(self->strand_, [self, error, done = std::move(done)] {
                if (self->current_ && self->ladder_ == ladder::restarting)
                    self->finish_current(execution_status::interrupted, false);
                done(error);
                if (!self->current_) self->start_next();
            });
        });
    });
}

// ---- running -------------------------------------------------------------------------------

void interpreter_context::start_next() {
    while (!current_ && !queue_.empty() && !closed_) {
        auto e = queue_.front();
        queue_.pop_front();
        waiting_ = queue_.size();
        const auto state = kernel_->state();
        if (state == kernels::kernel_state::dead || state == kernels::kernel_state::gone ||
            state == kernels::kernel_state::shutting_down) {
            e->set_error("KernelDead",
                         "the context's kernel is not running: " +
                             kernel_->model().value("reason", std::string("dead")),
                         {});
            e->finish(execution_status::error);
            remember(e);
            save_record();
            continue;
        }
        // Recorded before the kernel has it; code that cannot be recorded does not run
        // (--audit-required). The next execution tries the log again.
        if (auto why = audit_start(*e); !why.empty()) {
            log_.error("execution " + e->id() + " refused: " + why);
            e->set_error("AuditUnavailable", why + "; the code did not run", {});
            e->finish(execution_status::error);
            remember(e);
            save_record();
            continue;
        }
        current_ = e;
        running_ = true;
        ladder_ = ladder::none;
        // Checked at submit: the kernel runs the language.
        const auto& request = e->request();
        std::string code =
            request.language ? languages::kernel_code_for(*request.language, dialect_, request.code)
                                   .value_or(request.code)
                             : request.code;
        auto msg = gateway_execute_request(std::move(code), /*silent=*/false,
                                           /*store_history=*/true, session_id_);
        // The kernel describes DataFrames and figures for this request only when it asks.
        if (request.keep_result_descriptions) msg.metadata = describe_results_metadata;
        recorder_.emplace(
            e, msg.msg_id,
            recorder_limits{.result_cap_bytes = settings_.result_cap_bytes,
                            .results_budget_bytes = settings_.results_budget_bytes,
                            .text_bytes = e->text_budget_bytes()},
            [this](const std::string& name, const std::string& bytes) -> std::string {
                if (options_.one_shot || workdir_.empty() ||
                    !write_new_file(workdir_, "callisto-outputs", name, bytes))
                    return {};
                return "callisto-outputs/" + name;
            },
            options_.one_shot ? "and a one-shot execution keeps no files"
                              : "and the workdir is not writable");
        e->mark_started();
        save_record();  // running, before the kernel has the code
        if (settings_.audit && !workdir_.empty())
            workdir_before_ =
                capture_workdir(workdir_files(workdir_), settings_.audit_compared_files);
        // The shell channel keeps order: the runner is loaded and the variables are set
        // before the code runs.
        if (request.language && !runners_loaded_.contains(*request.language))
            if (auto setup = languages::runner_setup_code(*request.language, dialect_)) {
                send_silent(std::move(*setup));
                runners_loaded_.insert(*request.language);
            }
        if (!request.env.empty())
            if (auto set = languages::env_apply_code(dialect_, request.env))
                send_silent(std::move(*set));
        kernel_->count_execution();
        kernel_->submit(weak_from_this(), channel::shell, std::move(msg));
        if (auto t = e->request().timeout) {
            deadline_timer_.expires_after(*t);
            deadline_timer_.async_wait([weak = weak_from_this(), e](boost::system::error_code ec) {
                if (ec) return;
                if (auto self = weak.lock(); self && self->current_ == e) self->on_deadline();
            });
        }
    }
}

void interpreter_context::deliver_message(channel ch,
                                          std::shared_ptr<const kernelproto::message> msg) {
    asio::post(strand_, [self = shared_from_this(), ch, msg = std::move(msg)] {
        self->on_kernel_message(ch, *msg);
    });
}

// Not used while takes_messages() is true; kept correct for any path that encodes anyway.
void interpreter_context::deliver(std::shared_ptr<const kernelproto::websocket_frame> frame) {
    asio::post(strand_, [self = shared_from_this(), frame = std::move(frame)] {
        std::error_code ec;
        auto cm = kernelproto::from_websocket(frame->str(), frame->binary,
                                              kernelproto::websocket_format::v1, ec);
        if (ec) {
            self->log_.warn("undecodable kernel frame: " + ec.message());
            return;
        }
        self->on_kernel_message(cm.ch, cm.msg);
    });
}

void interpreter_context::on_kernel_message(channel ch, const kernelproto::message& msg) {
    if (closed_) return;
    // Statuses the gateway makes itself (empty parent): the kernel restarted or died.
    if (ch == channel::iopub && msg.msg_type == "status" && msg.parent_msg_id.empty()) {
        auto content = kernelproto::parse_untrusted_json(msg.content).value;
        const std::string state = content.is_object() ? content.value("execution_state", "") : "";
        // The cause ("kernel process killed: out of memory (limit 512MiB)") goes in the
        // evalue; the ename stays the stable kind.
        const std::string why = kernels::server_status_reason(msg);
        const std::string cause = why.empty() ? "" : " (" + why + ")";
        if (state == "restarting" || state == "dead") runners_loaded_.clear();  // a new process
        if (state == "restarting") {
            send_chdir();  // queued by the kernel session until the new process answers
            if (current_ && ladder_ != ladder::restarting) {
                current_->set_error(
                    "KernelRestarted",
                    "the kernel restarted while this code ran; its state is lost" + cause, {});
                finish_current(execution_status::error, false);
                start_next();
            }
        } else if (state == "dead" && current_) {
            current_->set_error("KernelDead", "the kernel died while this code ran" + cause, {});
            finish_current(execution_status::error, false);
            start_next();
        }
        return;
    }
    if (!current_ || !recorder_) return;
    if (recorder_->on_message(ch, msg)) maybe_finish();
}

void interpreter_context::maybe_finish() {
    if (!recorder_ || !recorder_->complete()) return;
    execution_status status =
        recorder_->reply_status() == "ok" ? execution_status::ok : execution_status::error;
    std::optional<bool> preserved;
    if (ladder_ == ladder::deadline) {
        status = execution_status::timeout;
        preserved = true;
    } else if (ladder_ == ladder::client_interrupt) {
        status = execution_status::interrupted;
        preserved = true;
    } else if (ladder_ == ladder::restarting) {
        return;  // the restart decides
    }
    finish_current(status, preserved);
    start_next();
}

void interpreter_context::finish_current(execution_status status,
                                         std::optional<bool> state_preserved) {
    deadline_timer_.cancel();
    grace_timer_.cancel();
    auto e = std::move(current_);
    current_.reset();
    recorder_.reset();
    running_ = false;
    ladder_ = ladder::none;
    if (!e) return;
    // After the reply, not queued behind the code: stop_on_error would abort it when the code
    // fails. Harmless after a restart (nothing remembered, nothing restored).
    if (!e->request().env.empty() && !closed_)
        if (auto restore = languages::env_restore_code(dialect_)) send_silent(std::move(*restore));
    e->finish(status, state_preserved);
    audit_end(*e);
    remember(e);
    save_record();
}

std::string interpreter_context::audit_start(const execution& e) {
    audit_seq_ = 0;
    if (!settings_.audit) return {};
    audit::execution_start start;
    start.started = std::chrono::system_clock::now();
    start.user = owner_;
    start.api = e.request().api;
    const std::string kernel_id = kernel_->id();
    start.kernel_id = kernel_id;
    start.context_id = id_;
    start.execution_id = e.id();
    start.code = e.request().code;
    auto r = settings_.audit->record_start(start);
    if (r.error.empty()) {
        audit_seq_ = r.seq;
        return {};
    }
    if (settings_.audit->settings().required) return r.error;
    log_.error("execution " + e.id() + " runs unrecorded (--audit-required=off): " + r.error);
    return {};
}

void interpreter_context::audit_end(const execution& e) {
    if (!settings_.audit) return;
    const auto record = e.to_json();
    audit::execution_end end;
    end.finished = std::chrono::system_clock::now();
    end.user = owner_;
    end.api = e.request().api;
    end.execution_id = e.id();
    end.run_seq = std::exchange(audit_seq_, 0);
    end.status = record.value("status", "");
    end.duration = std::chrono::milliseconds(record.value("duration_ms", 0LL));
    end.output_bytes = record["stdout"].get_ref<const std::string&>().size() +
                       record["stderr"].get_ref<const std::string&>().size() +
                       record["results"].dump().size();
    if (workdir_before_) {
        // Oversized results written to callisto-outputs/ are among the new files.
        end.files_written =
            changed_files(*workdir_before_,
                          capture_workdir(workdir_files(workdir_), settings_.audit_compared_files),
                          settings_.audit_named_files);
        workdir_before_.reset();
    }
    if (auto why = settings_.audit->record_end(end); !why.empty())
        log_.error("execution " + e.id() + " ended, but its end could not be recorded: " + why);
}

void interpreter_context::remember(const std::shared_ptr<execution>& e) {
    finished_order_.push_back(e->id());
    while (finished_order_.size() > settings_.finished_kept) {
        auto it = executions_.find(finished_order_.front());
        if (it != executions_.end()) {
            if (!it->second->request().idempotency_key.empty())
                keys_.erase(it->second->request().idempotency_key);
            executions_.erase(it);
        }
        finished_order_.pop_front();
    }
}

// ---- the time limit ladder: interrupt, then restart ------------------------------------------

void interpreter_context::on_deadline() { begin_interrupt(ladder::deadline); }

void interpreter_context::begin_interrupt(ladder why) {
    ladder_ = why;
    log_.info(std::string(why == ladder::deadline ? "deadline reached" : "interrupt asked") +
              " for execution " + current_->id() + "; interrupting");
    kernel_->interrupt([](kernels::kernel_outcome) {});
    grace_timer_.expires_after(settings_.interrupt_grace);
    grace_timer_.async_wait([weak = weak_from_this(), e = current_](boost::system::error_code ec) {
        if (ec) return;
        if (auto self = weak.lock(); self && self->current_ == e) self->on_grace_expired();
    });
}

void interpreter_context::on_grace_expired() {
    const auto status =
        ladder_ == ladder::deadline ? execution_status::timeout : execution_status::interrupted;
    log_.warn("execution " + current_->id() + " ignored the interrupt; restarting the kernel");
    ladder_ = ladder::restarting;
    kernel_->restart([weak = weak_from_this(), e = current_, status](kernels::kernel_outcome r) {
        auto self = weak.lock();
        if (!self) return;
        asio::post(self->strand_, [self, e, status, r] {
            if (self->current_ != e) return;
            if (!r.ok())
                e->add_stream("stderr", "[callisto] kernel restart failed: " + r.message + "\n");
            self->finish_current(status, false);
            self->start_next();
        });
    });
}

// ---- closing ---------------------------------------------------------------------------------

void interpreter_context::close_from_kernel(std::string reason) {
    asio::post(strand_, [self = shared_from_this(), reason = std::move(reason)] {
        if (self->closed_) return;  // closed by its owner first: not news to anyone
        self->close_from_kernel_now(reason);
        if (self->on_kernel_gone_) self->on_kernel_gone_(reason);
    });
}

void interpreter_context::watch_close(std::weak_ptr<const close_watcher> watcher) {
    asio::post(strand_, [self = shared_from_this(), watcher = std::move(watcher)]() mutable {
        if (self->closed_) {
            if (auto w = watcher.lock()) (*w)(self->close_reason_);
            return;
        }
        std::erase_if(self->close_watchers_, [](const auto& w) { return w.expired(); });
        self->close_watchers_.push_back(std::move(watcher));
    });
}

void interpreter_context::close_from_kernel_now(const std::string& reason) {
    if (closed_) return;
    closed_ = true;
    if (settings_.context_records && !options_.one_shot) settings_.context_records->remove(id_);
    close_reason_ = reason;
    auto fail = [&](const std::shared_ptr<execution>& e) {
        e->set_error("ContextClosed", reason, {});
        e->finish(execution_status::error, false);
    };
    if (current_) {
        fail(current_);
        finish_current(execution_status::error, false);
    }
    for (auto& e : queue_) fail(e);
    queue_.clear();
    waiting_ = 0;
    for (auto& watcher : std::exchange(close_watchers_, {}))
        if (auto w = watcher.lock()) (*w)(reason);
}

}  // namespace callisto::gateway::interpreter
