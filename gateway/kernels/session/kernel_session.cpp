#include "gateway/kernels/session/kernel_session.hpp"

#include <algorithm>
#include <csignal>

#include <boost/asio/post.hpp>

#include "gateway/kernels/output/output_cap_notice.hpp"
#include "gateway/kernels/output/output_fields.hpp"
#include "gateway/kernels/session/code_requests.hpp"
#include "kernelproto/ids.hpp"
#include "kernelproto/untrusted_json.hpp"
#include "launcher/kernelspec/ipykernel_bootstrap.hpp"

namespace callisto::gateway::kernels {

std::string_view to_string(kernel_state state) {
    switch (state) {
        case kernel_state::starting: return "starting";
        case kernel_state::running: return "running";
        case kernel_state::restarting: return "restarting";
        case kernel_state::shutting_down: return "shutting_down";
        case kernel_state::dead: return "dead";
        case kernel_state::gone: return "gone";
    }
    return "unknown";
}

namespace asio = boost::asio;
using kernelproto::channel;

namespace {

// Bounds on what one kernel holds for its clients.
constexpr std::size_t max_queued_requests = 1024;     // while the kernel is not yet connected
constexpr std::size_t max_awaiting_replies = 100000;  // requests in flight
// After a message dropped on iopub: how long a shell barrier's status may take before another
// barrier asks again (the new subscription may not have reached the kernel), and how many ask.
constexpr std::chrono::milliseconds status_barrier_wait{500};
constexpr int max_status_barriers = 20;
// On a saturated host, a silent kernel is judged frozen only after this many heartbeat timeouts.
constexpr int max_starved_timeouts = 10;

// A request as the parent of a message the gateway makes for it, from its serialized header
// (its msg_id read from there: in-gateway clients match on it).
kernelproto::message request_of(std::string header) {
    kernelproto::message request;
    request.header = header.empty() ? "{}" : std::move(header);
    const auto parsed = kernelproto::parse_untrusted_json(request.header).value;
    if (parsed.is_object() && parsed.contains("msg_id") && parsed["msg_id"].is_string())
        request.msg_id = parsed["msg_id"].get<std::string>();
    return request;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// Receives the reactor's reports on the reactor thread and posts them to the session's strand.
// Holds the session weakly: a late report about a session already gone is dropped.
class kernel_session::link_listener : public transport::link_events {
public:
    link_listener(std::weak_ptr<kernel_session> session,
                  asio::strand<asio::io_context::executor_type> strand,
                  std::shared_ptr<message_budget> inbound)
        : session_(std::move(session)), strand_(std::move(strand)), inbound_(std::move(inbound)) {}

    void on_open(transport::link_id id) override { link_ = id; }

    bool admit(channel, std::size_t bytes) override { return inbound_->admit(bytes); }

    void on_message(channel ch, kernelproto::message msg) override {
        msg.lease = inbound_->lease(kernelproto::message_bytes(msg));
        asio::post(strand_, [s = session_, link = link_.load(), ch, m = std::move(msg)]() mutable {
            if (auto self = s.lock()) self->on_link_message(link, ch, std::move(m));
        });
    }
    void on_connected() override {
        asio::post(strand_, [s = session_, link = link_.load()] {
            if (auto self = s.lock()) self->on_link_connected(link);
        });
    }
    void on_heartbeat(bool beating) override {
        asio::post(strand_, [s = session_, link = link_.load(), beating] {
            if (auto self = s.lock()) self->on_heartbeat(link, beating);
        });
    }
    void on_bad_message(channel ch, std::error_code ec) override {
        asio::post(strand_, [s = session_, ch, ec] {
            if (auto self = s.lock())
                self->log_.warn("dropped a bad message on " +
                                std::string(kernelproto::to_string(ch)) + ": " + ec.message());
        });
    }
    void on_message_dropped(channel ch) override {
        asio::post(strand_, [s = session_, link = link_.load(), ch] {
            if (auto self = s.lock()) self->on_message_dropped(link, ch);
        });
    }

private:
    std::weak_ptr<kernel_session> session_;
    asio::strand<asio::io_context::executor_type> strand_;
    std::shared_ptr<message_budget> inbound_;
    std::atomic<transport::link_id> link_{0};
};

kernel_session::kernel_session(kernel_environment& env, std::string id, launcher::kernelspec spec,
                               std::map<std::string, std::string> extra_env, std::string session_id)
    : env_(env),
      id_(std::move(id)),
      spec_(std::move(spec)),
      extra_env_(std::move(extra_env)),
      session_id_(session_id.empty() ? kernelproto::new_uuid() : std::move(session_id)),
      log_(env.log.component("kernel").with("kernel_id", id_)),
      strand_(asio::make_strand(env.ioc)),
      process_(std::make_shared<kernel_process>(env, strand_, id_, spec_, extra_env_, log_)),
      barrier_timer_(strand_),
      inbound_(std::make_shared<message_budget>(env.settings.kernel_buffer_bytes)),
      heartbeat_while_busy_(launcher::answers_heartbeat_while_busy(spec_)),
      heartbeat_(
          strand_, env.settings.heartbeat_timeout,
          [this](std::chrono::seconds silent_for) { on_frozen(silent_for); }, env.host),
      clients_(
          session_id_, env.settings.replay_buffer_bytes,
          output_limits{env.settings.ws_output_limit_bytes,
                        env.settings.ws_rich_output_limit_bytes},
          [this](std::size_t n) { model_.set_connections(n); },
          [this](output_kind kind) {
              env_.metrics.truncations
                  .with({"jupyter", kind == output_kind::stream ? "stream" : "rich"})
                  .inc();
          }) {}

kernel_session::~kernel_session() {
    // shutdown() normally ran; this is the last line of defence against leaked processes.
    if (link_) env_.links.close(*link_);
}

nlohmann::json kernel_session::model(kernel_process_view view) const {
    return model_.to_json(id_, spec_.name, view);
}

kernel_state kernel_session::state() const { return state_.load(); }

void kernel_session::share_sandbox(std::shared_ptr<launcher::session_sandbox> sandbox) {
    shares_sandbox_ = sandbox != nullptr;
    process_->share_sandbox(std::move(sandbox));
}

void kernel_session::with_sandbox(
    std::function<void(std::shared_ptr<launcher::session_sandbox>)> then) {
    asio::post(strand_, [self = shared_from_this(), then = std::move(then)] {
        then(self->process_->sandbox());
    });
}

void kernel_session::set_egress(egress_request egress) {
    egress_ = egress;
    process_->set_egress(std::move(egress));
}

std::string kernel_session::owner() const { return model_.owner(); }

void kernel_session::assign_owner(std::string name) {
    model_.assign_owner(std::move(name));
    if (env_.records)
        asio::post(strand_, [self = shared_from_this()] {
            // A failure is the store's to log: the kernel runs on, its new owner unrecorded.
            if (self->state_ == kernel_state::running) static_cast<void>(self->save_record());
        });
}

std::string kernel_session::save_record() {
    if (!env_.records || !process_->running()) return {};
    auto record = process_->record();
    record.owner = model_.owner();
    record.session = session_id_;
    return env_.records->save(record);
}

void kernel_session::forget_record() {
    if (env_.records) env_.records->remove(id_);
}

void kernel_session::mark_claimed() { model_.touch(); }

void kernel_session::hold(kernel_holder holder, std::string context_id) {
    model_.hold(holder, std::move(context_id));
}

void kernel_session::count_execution() { model_.count_execution(); }

kernel_activity kernel_session::activity() const { return model_.activity(); }

void kernel_session::set_state(kernel_state s, std::string execution_state, std::string reason) {
    state_ = s;
    if (s == kernel_state::dead) forget_record();
    model_.set(std::move(execution_state), std::move(reason));
}

// ---- lifecycle -------------------------------------------------------------------------------

void kernel_session::start(result_handler on_ready) {
    asio::post(strand_, [self = shared_from_this(), on_ready = std::move(on_ready)]() mutable {
        self->ready_waiters_.push_back(std::move(on_ready));
        // The observer is a private base: the cast is ours to make (aliasing the session).
        self->process_->set_observer(std::shared_ptr<kernel_process::observer>(
            self, static_cast<kernel_process::observer*>(self.get())));
        self->set_state(kernel_state::starting, "starting");
        self->spawn_process();
    });
}

void kernel_session::adopt(kernel_record record, result_handler on_ready,
                           std::shared_ptr<launcher::session_sandbox> shared) {
    asio::post(strand_, [self = shared_from_this(), record = std::move(record),
                         on_ready = std::move(on_ready), shared = std::move(shared)]() mutable {
        if (shared) self->share_sandbox(std::move(shared));
        self->ready_waiters_.push_back(std::move(on_ready));
        self->process_->set_observer(std::shared_ptr<kernel_process::observer>(
            self, static_cast<kernel_process::observer*>(self.get())));
        self->model_.assign_owner(record.owner);
        self->set_state(kernel_state::starting, "starting");
        self->adopting_ = true;
        self->orphans_.emplace(self->session_id_);
        self->sessions_from_headers_ = true;
        self->connected_ = false;
        self->spawned_at_ = std::chrono::steady_clock::now();
        if (auto why = self->process_->adopt(record); !why.empty()) {
            self->log_.warn(why);
            self->set_state(kernel_state::dead, "dead", why);
            self->finish_start({kernel_error::start_failed, why});
            return;
        }
        self->model_.set_process(self->process_->pid(), self->process_->forked());
    });
}

void kernel_session::spawn_process() {
    connected_ = false;
    orphans_.emplace(session_id_);  // a new process answers only what was sent to it
    sessions_from_headers_ = false;
    clients_.reset_executions();  // the executions of a previous process are over
    spawned_at_ = std::chrono::steady_clock::now();
    if (auto why = process_->spawn(); !why.empty()) {
        env_.metrics.start_failures.with({spec_.name}).inc();
        set_state(kernel_state::dead, "dead", why);
        finish_start({kernel_error::start_failed, why});
        return;
    }
    model_.set_process(process_->pid(), process_->forked());
}

void kernel_session::on_sockets_ready() { open_link(); }

void kernel_session::on_socket_check_failed(const std::string& why) {
    env_.metrics.start_failures.with({spec_.name}).inc();
    stop_process(false, [self = shared_from_this(), why] {
        self->set_state(kernel_state::dead, "dead", why);
        self->clients_.broadcast_status("dead", why);
        self->finish_start({kernel_error::start_failed, why});
    });
}

void kernel_session::open_link() {
    auto listener = std::make_shared<link_listener>(weak_from_this(), strand_, inbound_);
    transport::link_options options;
    options.session_id = session_id_;
    options.max_part_bytes = env_.settings.kernel_message_limit_bytes;
    link_ = env_.links.open(process_->connection(), listener, options);
}

void kernel_session::on_ready_timeout() {
    if (connected_ || ready_waiters_.empty()) return;
    log_.warn("kernel did not answer within the ready timeout; stopping it");
    env_.metrics.start_failures.with({spec_.name}).inc();
    std::string why = "kernel did not answer kernel_info_request within " +
                      std::to_string(env_.settings.kernel_ready_timeout.count() / 1000) + " s";
    stop_process(false, [self = shared_from_this(), why] {
        self->set_state(kernel_state::dead, "dead", why);
        self->clients_.broadcast_status("dead", why);
        self->finish_start({kernel_error::start_failed, why});
    });
}

void kernel_session::on_link_connected(transport::link_id link) {
    if (link_ != link || connected_) return;
    connected_ = true;
    adopting_ = false;
    process_->cancel_ready_timeout();
    if (state_ == kernel_state::starting || state_ == kernel_state::restarting) {
        if (auto why = save_record(); !why.empty() && env_.settings.state_required)
            return refuse_unrecorded(why);
        set_state(kernel_state::running, "idle");
        env_.metrics.starts.with({spec_.name}).inc();
        env_.metrics.start_seconds.with({spec_.name}).observe(seconds_since(spawned_at_));
    }
    while (!queued_.empty()) {
        auto q = std::move(queued_.front());
        queued_.pop_front();
        forward(q.from, q.ch, std::move(q.msg));
    }
    finish_start({});
}

void kernel_session::refuse_unrecorded(const std::string& why) {
    const std::string reason =
        "its record could not be written to --state-dir (" + why +
        "), so it would not survive a gateway restart; refused (--state-required)";
    log_.error("kernel stopped: " + reason);
    env_.metrics.start_failures.with({spec_.name}).inc();
    stop_process(false, [self = shared_from_this(), reason] {
        self->set_state(kernel_state::dead, "dead", reason);
        self->clients_.broadcast_status("dead", reason);
        self->finish_start({kernel_error::start_failed, reason});
    });
}

void kernel_session::finish_start(kernel_outcome outcome) {
    auto waiters = std::move(ready_waiters_);
    ready_waiters_.clear();
    if (!outcome.ok()) queued_.clear();
    for (auto& w : waiters) w(outcome);
}

void kernel_session::on_heartbeat(transport::link_id link, bool beating) {
    if (link_ != link) return;  // a report about a previous process
    if (!beating) {
        log_.debug("heartbeat missed");
        return heartbeat_.missed(weak_from_this());
    }
    if (auto silence = heartbeat_.answered())
        log_.info("heartbeat answered again after " + std::to_string(silence->count()) + " s");
}

void kernel_session::on_frozen(std::chrono::seconds silent_for) {
    // An adopted kernel still starting (busy with a cell from before the restart) is judged
    // by its heartbeat too: nothing else would notice it frozen.
    const bool judged =
        state_ == kernel_state::running || (adopting_ && state_ == kernel_state::starting);
    if (!judged || !process_->running()) return;
    if (!heartbeat_while_busy_ && model_.activity().execution_state == "busy") {
        // Its main loop answers the heartbeat, and it is running code.
        log_.debug("no heartbeat for " + std::to_string(silent_for.count()) +
                   " s while busy: excused, as this kernel answers between executions");
        return heartbeat_.excuse();
    }
    // On a saturated host a kernel's heartbeat thread may simply not be scheduled: a live kernel
    // is not killed for that (its work would be lost), up to a bound that still catches one
    // that froze meanwhile.
    const auto starved_bound = env_.settings.heartbeat_timeout * max_starved_timeouts;
    if (env_.host && env_.host->saturated() && silent_for < starved_bound) {
        log_.info("no heartbeat for " + std::to_string(silent_for.count()) +
                  " s while the host is saturated: not judged frozen before " +
                  std::to_string(starved_bound.count()) + " s");
        return heartbeat_.wait_longer();
    }
    frozen_reason_ =
        "unresponsive: answered no heartbeat for " + std::to_string(silent_for.count()) + " s";
    log_.warn("kernel " + frozen_reason_ + "; killing it");
    env_.processes.terminate(process_->pid(), std::chrono::milliseconds(0));
}

// It died on its own: a crash, a kill from outside, an OOM kill, or killed for being frozen.
void kernel_session::on_exit(const launcher::exit_status& status) {
    const bool frozen = !frozen_reason_.empty();
    const bool was_running = state_ == kernel_state::running;
    std::string why = frozen ? frozen_reason_ + " (killed)" : "kernel process " + status.describe();
    // A start that failed: what the process said (bwrap's "execvp ...: No such file or
    // directory", a traceback) is the reason the client needs, not the exit code alone.
    if (!was_running && !frozen && !process_->last_words().empty())
        why += ": " + process_->last_words();
    log_.warn(why);
    const char* cause = frozen ? "unresponsive" : death_cause(status);
    env_.metrics.deaths.with({cause}).inc();
    if (!was_running) env_.metrics.start_failures.with({spec_.name}).inc();
    release_process();
    lose_executions(why);
    awaiting_reply_.clear();
    queued_.clear();
    if (was_running && process_->may_auto_restart()) {
        env_.metrics.restarts.with({cause}).inc();
        // Its state is lost either way; a fresh process keeps the kernel id and the clients.
        log_.info("restarting automatically (" + std::to_string(process_->recent_auto_restarts()) +
                  " of " + std::to_string(env_.settings.autorestart_limit) + " in the window)");
        set_state(kernel_state::restarting, "restarting", why);
        clients_.broadcast_status("restarting", why);
        clients_.broadcast(
            channel::iopub,
            kernelproto::make_message(
                "stream",
                {{"name", "stderr"},
                 {"text", "Kernel died (" + why + "); restarting it. Its state is lost.\n"}},
                session_id_));
        spawn_process();
        return;
    }
    set_state(kernel_state::dead, "dead", why);
    clients_.broadcast_status("dead", why);
    // Clients show stderr; the status message alone cannot say why.
    clients_.broadcast(
        channel::iopub,
        kernelproto::make_message(
            "stream", {{"name", "stderr"}, {"text", "Kernel died: " + why + "\n"}}, session_id_));
    finish_start({kernel_error::start_failed, why});
}

void kernel_session::release_process() {
    heartbeat_.stop();
    drops_.reset();
    barrier_timer_.cancel();
    awaiting_idle_.clear();
    frozen_reason_.clear();
    process_->release();
    model_.set_process(0, false);
    if (link_) env_.links.close(*link_);
    link_.reset();
    connected_ = false;
}

void kernel_session::stop_process(bool restart, std::function<void()> then, bool ask) {
    auto done = [self = shared_from_this(), then = std::move(then)] {
        self->release_process();
        then();
    };
    if (!process_->running()) return done();
    const bool asked = ask && link_ && connected_;
    if (asked) {
        auto request =
            kernelproto::make_message("shutdown_request", {{"restart", restart}}, session_id_);
        env_.links.send(*link_, channel::control, std::move(request));
    }
    process_->stop(asked, std::move(done));
}

void kernel_session::restart(result_handler on_done) {
    restart_process(true, false, std::move(on_done));
}

void kernel_session::renew(result_handler on_done) {
    restart_process(false, true, std::move(on_done));
}

void kernel_session::restart_process(bool ask, bool renew, result_handler on_done) {
    asio::post(strand_, [self = shared_from_this(), ask, renew,
                         on_done = std::move(on_done)]() mutable {
        if (self->state_ == kernel_state::shutting_down || self->state_ == kernel_state::gone) {
            on_done({kernel_error::shutting_down, "kernel is shutting down"});
            return;
        }
        if (self->state_ == kernel_state::restarting || self->state_ == kernel_state::starting) {
            self->ready_waiters_.push_back(std::move(on_done));
            return;
        }
        self->log_.info("restarting");
        // A renewal resets a kept kernel for its owner's next context: no one asked for it.
        self->env_.metrics.restarts.with({renew ? "reset" : "requested"}).inc();
        self->ready_waiters_.push_back(std::move(on_done));
        self->set_state(kernel_state::restarting, "restarting");
        self->clients_.broadcast_status("restarting");
        self->awaiting_reply_.clear();
        self->stop_process(
            true,
            [self, renew] {
                self->lose_executions();
                if (self->state_ != kernel_state::restarting) return;
                if (renew) self->process_->drop_sandbox();
                self->spawn_process();
            },
            ask);
    });
}

void kernel_session::interrupt(result_handler on_done) {
    asio::post(strand_, [self = shared_from_this(), on_done = std::move(on_done)] {
        if (!self->process_->running() || self->state_ != kernel_state::running) {
            on_done({kernel_error::not_running, "kernel is not running"});
            return;
        }
        // As the kernelspec says: IRkernel, for one, reads no control message while it runs
        // code, and ipykernel turns its interrupt_request into this same SIGINT.
        if (self->spec_.interrupt == launcher::interrupt_mode::message && self->link_) {
            self->env_.links.send(
                *self->link_, channel::control,
                kernelproto::make_message("interrupt_request", nlohmann::json::object(),
                                          self->session_id_));
        } else {
            self->process_->interrupt();
        }
        on_done({});
    });
}

void kernel_session::shutdown(std::function<void()> on_done, std::string reason) {
    asio::post(strand_, [self = shared_from_this(), on_done = std::move(on_done),
                         reason = std::move(reason)]() mutable {
        if (self->state_ == kernel_state::gone) {
            on_done();
            return;
        }
        self->shutdown_waiters_.push_back(std::move(on_done));
        if (self->state_ == kernel_state::shutting_down) return;
        self->log_.info("shutting down: " + reason);
        self->set_state(kernel_state::shutting_down, "dead", reason);
        self->finish_start({kernel_error::shutting_down, "kernel was shut down"});
        self->clients_.broadcast_status("dead");
        auto gone = [self, reason] {
            self->lose_executions();
            self->awaiting_reply_.clear();
            self->queued_.clear();
            self->state_ = kernel_state::gone;
            self->forget_record();
            auto waiters = std::move(self->shutdown_waiters_);
            self->shutdown_waiters_.clear();
            for (auto& w : waiters) w();
            // After the waiters (the manager forgets the kernel, a culled id starts to answer
            // 410): a client that reacts to the close by asking about the kernel is told it
            // is gone, not that it still exists.
            self->clients_.close_all(reason);
        };
        self->stop_process(false, std::move(gone), self->env_.settings.ask_before_removing);
    });
}

// ---- clients -------------------------------------------------------------------------------

void kernel_session::attach(const std::shared_ptr<kernel_client>& client,
                            std::optional<std::uint64_t> since) {
    asio::post(strand_, [self = shared_from_this(), weak = std::weak_ptr(client), since] {
        auto c = weak.lock();
        if (!c) return;
        if (self->state_ == kernel_state::gone || self->state_ == kernel_state::shutting_down) {
            c->close_from_kernel("kernel shut down");
            return;
        }
        self->clients_.add(c, since);
        self->note_client_session(c, c->jupyter_session());
        if (self->state_ == kernel_state::dead)
            self->clients_.send_to(c, channel::iopub,
                                   kernelproto::make_message(
                                       "status", {{"execution_state", "dead"}}, self->session_id_));
    });
}

void kernel_session::detach(const kernel_client* client) {
    asio::post(strand_, [self = shared_from_this(), client] {
        self->clients_.remove(client);
        if (self->orphans_) self->orphans_->client_gone(client);
    });
}

void kernel_session::submit(std::weak_ptr<kernel_client> from, channel ch,
                            kernelproto::message msg) {
    asio::post(strand_, [self = shared_from_this(), from = std::move(from), ch,
                         m = std::move(msg)]() mutable {
        switch (self->state_) {
            case kernel_state::running: self->forward(from, ch, std::move(m)); return;
            case kernel_state::starting:
            case kernel_state::restarting:
                if (self->queued_.size() < max_queued_requests) {
                    self->queued_.push_back({std::move(from), ch, std::move(m)});
                    return;
                }
                self->log_.warn("request queue full while the kernel starts; dropping " +
                                m.msg_type);
                return;
            default: self->log_.debug("dropping " + m.msg_type + ": kernel is not running"); return;
        }
    });
}

void kernel_session::forward(const std::weak_ptr<kernel_client>& from, channel ch,
                             kernelproto::message msg) {
    if (!link_) return;
    if (orphans_ && (sessions_from_headers_ || orphans_->waiting() > 0))
        if (auto client = from.lock()) note_client_session(client, header_session(msg));
    // Before the request is tracked or recorded: one dropped here never ran.
    const bool awaits_reply = ch == channel::shell || ch == channel::control;
    if (awaits_reply) {
        if (awaiting_reply_.size() >= max_awaiting_replies)
            std::erase_if(awaiting_reply_,
                          [](const auto& kv) { return kv.second.client.expired(); });
        if (awaiting_reply_.size() >= max_awaiting_replies) {
            log_.warn("too many requests in flight; dropping " + msg.msg_type);
            return;
        }
    }
    if (may_run_code(msg.msg_type)) {
        // The gateway's own clients (the interpreter API) record their executions themselves.
        auto client = from.lock();
        if (client && !client->takes_messages()) {
            if (!track_request(client, ch, msg)) return;
            if (msg.msg_type == "execute_request") model_.count_execution();
        }
    }
    if (awaits_reply) {
        kernelproto::message request;
        request.header = msg.header;
        request.msg_id = msg.msg_id;
        request.msg_type = msg.msg_type;
        request.session = msg.session;
        if (ch == channel::shell) {
            // Only a kernel that publishes no idle for some requests fills it: start again.
            if (awaiting_idle_.size() >= max_awaiting_replies) awaiting_idle_.clear();
            awaiting_idle_[msg.msg_id] = msg.header;
        }
        awaiting_reply_[msg.msg_id] = {from, ch, std::move(request)};
    }
    msg.identities.clear();
    env_.metrics.relayed_to_kernel.observe(static_cast<double>(kernelproto::message_bytes(msg)));
    env_.links.send(*link_, ch, std::move(msg));
}

void kernel_session::on_link_message(transport::link_id link, channel ch,
                                     kernelproto::message msg) {
    if (link_ != link) return;  // from a previous process
    report_dropped(msg);
    const std::size_t bytes = kernelproto::message_bytes(msg);
    env_.metrics.relayed_to_clients.observe(static_cast<double>(bytes));
    switch (ch) {
        case channel::iopub: {
            if (drops_.is_barrier(msg.parent_msg_id)) {
                // The gateway's own request: no client asked, and its busy is no execution's.
                if (msg.msg_type == "status") drops_.barrier_status(msg.parent_msg_id);
                return settle_drops();
            }
            if (executions_.pending() > 0) executions_.output(msg.parent_msg_id, bytes);
            if (msg.msg_type == "execute_input") cap_echoed_code(msg);
            const std::string execution_state = track_activity(msg);
            if (execution_state == "idle")
                awaiting_idle_.erase(msg.parent_msg_id);
            else if (execution_state == "busy")
                busy_parent_header_ = msg.parent_header;
            // A kernel that answers its heartbeat between executions was excused while busy:
            // its silence counts from the end of the execution, not from its start.
            if (!heartbeat_while_busy_ && execution_state == "idle") heartbeat_.excuse();
            clients_.relay_iopub(std::move(msg), execution_state);
            return;
        }
        case channel::shell:
        case channel::control: {
            if (drops_.is_barrier(msg.parent_msg_id)) {
                drops_.barrier_replied(msg.parent_msg_id);
                return settle_drops();
            }
            auto it = awaiting_reply_.find(msg.parent_msg_id);
            if (it == awaiting_reply_.end()) {
                // Our own request, its client left, or (adopted) sent before the restart.
                if (orphans_) deliver_orphan(ch, std::move(msg));
                return;
            }
            if (msg.msg_type == "execute_reply" || msg.msg_type == "debug_reply") track_reply(msg);
            auto client = it->second.client.lock();
            awaiting_reply_.erase(it);
            if (client)
                clients_.send_to(client, ch, std::move(msg));
            else if (orphans_)  // its client left: kept for the session's return
                deliver_orphan(ch, std::move(msg));
            return;
        }
        case channel::stdin_: {
            // input_request: to the client whose execute_request is waiting for input.
            auto it = awaiting_reply_.find(msg.parent_msg_id);
            if (it == awaiting_reply_.end()) return;
            if (auto client = it->second.client.lock())
                clients_.send_to(client, ch, std::move(msg));
            return;
        }
    }
}

void kernel_session::deliver_orphan(channel ch, kernelproto::message msg) {
    const std::string what = msg.msg_type + " to " + msg.parent_msg_id;
    if (auto d = orphans_->arrived(ch, std::move(msg))) {
        log_.info("delivered " + what + " to another client of the session that sent it");
        clients_.send_to(d->client, d->what.channel, std::move(d->what.message));
    }
}

void kernel_session::note_client_session(const std::shared_ptr<kernel_client>& client,
                                         const std::string& session) {
    if (!orphans_ || session.empty()) return;
    for (auto& r : orphans_->client_seen(client, session)) {
        log_.info("delivered " + r.message.msg_type + " to " + r.message.parent_msg_id +
                  ", kept while no client of its session was here, on the session's return");
        clients_.send_to(client, r.channel, std::move(r.message));
    }
}

bool kernel_session::track_request(const std::shared_ptr<kernel_client>& client, channel ch,
                                   const kernelproto::message& msg) {
    // An execute_request on the shell is parsed only for an observer that records its code;
    // the metrics need the reply's status and the time alone.
    const bool recorded = env_.executions != nullptr;
    nlohmann::json content;
    // Code holding a NUL is refused; JSON can only spell one as the escape \u0000.
    if (recorded || ch != channel::shell || msg.msg_type != "execute_request" ||
        msg.content.view().find("\\u0000") != std::string_view::npos)
        content = kernelproto::parse_untrusted_json(msg.content).value;
    auto verdict = classify_code_request(ch, msg.msg_type, content);
    if (!verdict.refused.empty()) {
        log_.warn(msg.msg_type + " " + msg.msg_id + " refused: " + verdict.refused);
        answer_failed_request(client, ch, msg, "RequestRefused",
                              verdict.refused + "; the code did not run", true);
        return false;
    }
    if (!verdict.runs) return true;
    websocket_execution e;
    e.kernel_id = id_;
    e.kernelspec = spec_.name;
    e.user = client->user_name();
    e.msg_id = msg.msg_id;
    e.request_header = msg.header;
    e.request_channel = ch;
    e.kind = std::move(verdict.runs->kind);
    e.code = std::move(verdict.runs->code);
    e.user_expressions = std::move(verdict.runs->user_expressions);
    e.started = std::chrono::system_clock::now();
    e.started_steady = std::chrono::steady_clock::now();
    if (recorded) {
        // Recorded before the kernel has it, or refused (--audit-required): nothing runs
        // unrecorded, and each request tries the log again.
        if (auto why = env_.executions->starting(e); !why.empty()) {
            log_.error(msg.msg_type + " " + msg.msg_id + " refused: " + why);
            answer_failed_request(client, ch, msg, "AuditUnavailable",
                                  why + "; the code did not run", true);
            return false;
        }
    }
    // Released, not merely emptied: assigning an empty string keeps the buffer, so each
    // execution still pending kept its code's memory until its reply (80 requests of 16 MiB
    // took the gateway past 1.2 GB). Nothing after the record needs the code.
    std::string().swap(e.code);
    e.user_expressions = nullptr;
    for (const auto& lost : executions_.started(std::move(e))) report(lost);
    return true;
}

void kernel_session::track_reply(const kernelproto::message& msg) {
    auto content = kernelproto::parse_untrusted_json(msg.content).value;
    std::string status = "unknown";
    if (msg.msg_type == "debug_reply") {
        if (content.is_object() && content.contains("success") && content["success"].is_boolean())
            status = content["success"].get<bool>() ? "ok" : "error";
    } else if (content.is_object() && content.contains("status") && content["status"].is_string()) {
        status = content["status"].get<std::string>();
    }
    // Only a kernel's own words are labels; anything else would grow the metric without bound.
    if (status != "ok" && status != "error" && status != "aborted") status = "unknown";
    if (auto e = executions_.replied(msg.parent_msg_id, std::move(status))) report(*e);
}

void kernel_session::lose_executions(const std::string& why) {
    for (const auto& e : executions_.lose_all()) {
        report(e);
        if (why.empty()) continue;
        // Its client would otherwise wait for a reply no process will send.
        auto waiting = awaiting_reply_.find(e.msg_id);
        auto client = waiting == awaiting_reply_.end() ? nullptr : waiting->second.client.lock();
        if (!client) continue;
        kernelproto::message request;
        request.header = e.request_header;
        request.msg_id = e.msg_id;
        request.msg_type =
            e.kind.starts_with("debug_request") ? "debug_request" : "execute_request";
        answer_failed_request(client, e.request_channel, request, "KernelDied",
                              "the kernel died while this ran: " + why, false);
    }
}

void kernel_session::report(const websocket_execution& e) {
    env_.metrics.executions.with({"jupyter", e.status}).inc();
    env_.metrics.execution_seconds.with({"jupyter"})
        .observe(std::chrono::duration<double>(e.duration).count());
    if (env_.executions) env_.executions->finished(e);
}

void kernel_session::answer_failed_request(const std::shared_ptr<kernel_client>& client, channel ch,
                                           const kernelproto::message& request,
                                           const std::string& ename, const std::string& evalue,
                                           bool with_status) {
    auto to_client = [&](channel to, std::string_view type, const nlohmann::json& content) {
        clients_.send_to(
            client, to,
            kernelproto::make_message(type, content, session_id_, "callisto", &request));
    };
    if (request.msg_type == "debug_request") {
        // A Debug Adapter Protocol response, as ipykernel's own failures are.
        auto content = kernelproto::parse_untrusted_json(request.content).value;
        nlohmann::json reply = {{"type", "response"}, {"seq", 0},
                                {"request_seq", 0},   {"success", false},
                                {"command", ""},      {"message", ename + ": " + evalue}};
        if (content.is_object()) {
            if (content.contains("seq") && content["seq"].is_number_integer())
                reply["request_seq"] = content["seq"];
            if (content.contains("command") && content["command"].is_string())
                reply["command"] = content["command"];
        }
        return to_client(ch, "debug_reply", reply);
    }
    const nlohmann::json error = {
        {"ename", ename}, {"evalue", evalue}, {"traceback", {ename + ": " + evalue}}};
    auto reply_content = error;
    reply_content["status"] = "error";
    reply_content["execution_count"] = nullptr;
    // What a kernel sends for a failed execution: busy, the error, idle, and the reply. For a
    // kernel that died, no busy and idle: the server's own status (restarting, dead) is the
    // kernel's state now.
    if (with_status) to_client(channel::iopub, "status", {{"execution_state", "busy"}});
    to_client(channel::iopub, "error", error);
    if (with_status) to_client(channel::iopub, "status", {{"execution_state", "idle"}});
    to_client(ch, "execute_reply", reply_content);
}

void kernel_session::on_message_dropped(transport::link_id link, channel ch) {
    if (link_ != link) return;  // a report about a previous process
    const std::size_t limit =
        ch == channel::iopub
            ? env_.settings.kernel_message_limit_bytes
            : std::min(env_.settings.kernel_message_limit_bytes, transport::max_reply_part_bytes);
    const std::string what =
        "the kernel sent a message on " + std::string(kernelproto::to_string(ch)) +
        " with a part over " + human_bytes(limit) +
        (ch == channel::iopub ? " (--kernel-message-limit)"
                              : " (the limit for replies: --kernel-message-limit, 16 MiB at most)");
    log_.warn(what + ": dropped, with what followed it until the connection was made again");
    if (ch == channel::iopub || ch == channel::stdin_) {
        // No reply will say so: the output, or the input request, is gone without a trace.
        const auto parent = request_of(busy_parent_header_);
        const std::string text =
            "[callisto] " + what +
            (ch == channel::iopub
                 ? ": it was dropped, and output that followed it may be lost\n"
                 : ": an input request was dropped; interrupt the kernel if it waits for input\n");
        clients_.broadcast(channel::iopub,
                           kernelproto::make_message("stream", {{"name", "stderr"}, {"text", text}},
                                                     session_id_, "callisto", &parent));
    }
    std::vector<drop_recovery::request> requests;
    requests.reserve(awaiting_reply_.size());
    for (const auto& [id, request] : awaiting_reply_) requests.push_back({id, request.ch});
    std::vector<std::string> idles;
    idles.reserve(awaiting_idle_.size());
    for (const auto& kv : awaiting_idle_) idles.push_back(kv.first);
    status_barriers_sent_ = 0;
    barrier_timer_.cancel();
    for (channel barrier : drops_.dropped(ch, requests, std::move(idles))) send_barrier(barrier);
    settle_drops();
}

void kernel_session::send_barrier(channel ch) {
    if (!link_) return;
    auto barrier =
        kernelproto::make_message("kernel_info_request", nlohmann::json::object(), session_id_);
    drops_.barrier_sent(ch, barrier.msg_id);
    if (ch == channel::shell) ++status_barriers_sent_;
    env_.links.send(*link_, ch, std::move(barrier));
}

void kernel_session::settle_drops() {
    if (drops_.needs_another_status_barrier()) {
        if (status_barriers_sent_ >= max_status_barriers) {
            log_.warn("no status came on iopub for " + std::to_string(status_barriers_sent_) +
                      " kernel_info_requests; judging what was lost without it");
            drops_.stop_waiting_for_status();
        } else {
            barrier_timer_.expires_after(status_barrier_wait);
            barrier_timer_.async_wait(
                [self = weak_from_this()](const boost::system::error_code& ec) {
                    auto s = self.lock();
                    if (ec || !s || !s->drops_.needs_another_status_barrier()) return;
                    s->send_barrier(channel::shell);
                    s->settle_drops();
                });
            return;
        }
    }
    auto verdict = drops_.take_verdict();
    if (!verdict) return;
    barrier_timer_.cancel();
    for (const auto& id : verdict->replies_lost) {
        auto it = awaiting_reply_.find(id);
        if (it == awaiting_reply_.end()) continue;
        const in_flight lost = std::move(it->second);
        awaiting_reply_.erase(it);
        answer_lost_reply(lost);
    }
    for (const auto& id : verdict->idles_lost) {
        auto it = awaiting_idle_.find(id);
        if (it == awaiting_idle_.end()) continue;
        const auto request = request_of(std::move(it->second));
        awaiting_idle_.erase(it);
        log_.info("published the idle status of " + id + ", lost with a dropped message");
        // As if the kernel had published it: the model and the replay buffer follow. Idle only
        // when no other request is still under way.
        if (awaiting_idle_.empty())
            model_.on_kernel_message("idle", state_ == kernel_state::running);
        clients_.relay_iopub(kernelproto::make_message("status", {{"execution_state", "idle"}},
                                                       session_id_, "callisto", &request),
                             "idle");
    }
}

void kernel_session::answer_lost_reply(const in_flight& lost) {
    const auto& request = lost.request;
    log_.warn(request.msg_type + " " + request.msg_id +
              ": its reply was lost with a dropped message; answered with an error");
    const std::size_t limit =
        std::min(env_.settings.kernel_message_limit_bytes, transport::max_reply_part_bytes);
    const std::string ename = "MessageTooLarge";
    const std::string evalue =
        "no reply came: the kernel sent a message with a part over the gateway's limit of " +
        human_bytes(limit) +
        " for replies (--kernel-message-limit), which was dropped with the kernel's "
        "connection; this request's reply, or the request itself, was lost with it";
    auto reply_type = request.msg_type;
    if (reply_type.ends_with("_request"))
        reply_type.replace(reply_type.size() - 8, 8, "_reply");
    else
        reply_type += "_reply";
    nlohmann::json content = {{"status", "error"},
                              {"ename", ename},
                              {"evalue", evalue},
                              {"traceback", {ename + ": " + evalue}}};
    if (request.msg_type == "debug_request") {
        content = {{"type", "response"}, {"success", false}, {"message", ename + ": " + evalue}};
    } else if (request.msg_type == "execute_request") {
        content["execution_count"] = nullptr;
        content["user_expressions"] = nlohmann::json::object();
        content["payload"] = nlohmann::json::array();
    }
    auto reply = kernelproto::make_message(reply_type, content, session_id_, "callisto", &request);
    if (request.msg_type == "execute_request" || request.msg_type == "debug_request")
        track_reply(reply);
    auto client = lost.client.lock();
    if (!client) return;
    if (request.msg_type == "debug_request")
        return answer_failed_request(client, lost.ch, request, ename, evalue, false);
    if (request.msg_type == "execute_request")
        clients_.send_to(
            client, channel::iopub,
            kernelproto::make_message(
                "error",
                {{"ename", ename}, {"evalue", evalue}, {"traceback", {ename + ": " + evalue}}},
                session_id_, "callisto", &request));
    clients_.send_to(client, lost.ch, std::move(reply));
}

void kernel_session::cap_echoed_code(kernelproto::message& msg) {
    auto cut = cap_execute_input(msg.content, max_echoed_code_bytes);
    if (!cut) return;
    msg.content = std::move(*cut);
    // The received frame goes now; what the clients and the replay buffer keep is counted.
    msg.lease = inbound_->lease(kernelproto::message_bytes(msg));
}

void kernel_session::report_dropped(const kernelproto::message& next) {
    const auto dropped = inbound_->take_dropped();
    if (dropped.messages == 0) return;
    log_.warn("the kernel sent output faster than it could be passed on: dropped " +
              std::to_string(dropped.messages) + " messages (" + human_bytes(dropped.bytes) +
              "); " + human_bytes(inbound_->held_bytes()) + " of its messages held");
    // Addressed to the execution the next message belongs to, which is most likely the one
    // that flooded; a server-made message has no parent, and the notice then has none either.
    clients_.broadcast(
        channel::iopub,
        flood_dropped_notice(dropped.messages, dropped.bytes, inbound_->budget_bytes(),
                             next.parent_header, next.parent_msg_id, session_id_));
}

std::string kernel_session::track_activity(const kernelproto::message& msg) {
    std::string state;
    if (msg.msg_type == "status") {
        auto content = kernelproto::parse_untrusted_json(msg.content).value;
        if (content.is_object() && content.contains("execution_state") &&
            content["execution_state"].is_string())
            state = content["execution_state"].get<std::string>();
    }
    model_.on_kernel_message(state, state_ == kernel_state::running);
    return state;
}

}  // namespace callisto::gateway::kernels
