#include "gateway/kernels/lifecycle/kernel_manager.hpp"

#include <atomic>
#include <chrono>

#include <boost/asio/post.hpp>

#include "kernelproto/ids.hpp"

namespace callisto::gateway::kernels {

kernel_manager::kernel_manager(kernel_environment& env, const launcher::kernelspec_catalog& catalog,
                               culling_policy culling,
                               std::map<std::string, std::size_t> pool_sizes,
                               std::size_t max_kernels, kernel_reuse reuse, clock_fn clock)
    : env_(env),
      catalog_(catalog),
      culling_(culling),
      max_kernels_(max_kernels),
      reuse_(reuse),
      clock_(std::move(clock)),
      culled_(culling.retention),
      pool_(
          env.ioc, catalog, std::move(pool_sizes),
          [&env](launcher::kernelspec spec) {
              return std::make_shared<kernel_session>(env, kernelproto::new_uuid(), std::move(spec),
                                                      std::map<std::string, std::string>{});
          },
          env.log.component("pool")),
      cull_timer_(boost::asio::make_strand(env.ioc)),
      kept_(reuse.kept_per_user) {}

void kernel_manager::start() {
    pool_.start();
    start_culling();
}

void kernel_manager::start_culling() {
    if (!culling_.enabled()) return;
    env_.log.info("culling kernels: idle " + std::to_string(culling_.idle_timeout.count()) +
                  " s, busy " + std::to_string(culling_.busy_timeout.count()) + " s, lifetime " +
                  std::to_string(culling_.max_lifetime.count()) + " s (0 = never)");
    schedule_cull();
}

void kernel_manager::schedule_cull() {
    cull_timer_.expires_after(culling_.interval);
    cull_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
        }
        cull_once();
        schedule_cull();
    });
}

std::size_t kernel_manager::cull_once() {
    const auto now = clock_();
    std::size_t culled = 0;
    for (const auto& kernel : list()) {
        auto state = kernel->state();
        if (state == kernel_state::shutting_down || state == kernel_state::gone) continue;
        auto decision = cull_reason(kernel->activity(), now, culling_);
        if (!decision) continue;
        const std::string& reason = decision->reason;
        env_.log.info("culling kernel " + kernel->id() + ": " + reason);
        env_.metrics.culls.with({decision->rule}).inc();
        culled_.record(kernel->id(), {now, reason, kernel->owner(), kernel->kernelspec_name()},
                       now);
        ++culled;
        kernel->shutdown(
            [this, kernel] {
                std::lock_guard lock(mutex_);
                forget_locked(kernel);
            },
            "kernel culled: " + reason);
    }
    return culled;
}

std::optional<culled_kernel> kernel_manager::culled_for(const std::string& id,
                                                        const user& who) const {
    auto entry = culled_.find(id, clock_());
    if (!entry || !who.may_use(entry->owner)) return std::nullopt;
    return entry;
}

std::string kernel_manager::default_kernel_name() const {
    return env_.settings.default_kernel.empty() ? catalog_.default_name()
                                                : env_.settings.default_kernel;
}

void kernel_manager::adopt(kernel_record record, std::function<void(create_kernel_result)> done) {
    auto spec = catalog_.find(record.kernelspec);
    const bool known_spec = spec.has_value();
    if (!spec) {
        // Nothing here can run it again; its process is stopped all the same (below), so
        // nothing is left behind.
        spec = launcher::kernelspec{};
        spec->name = record.kernelspec;
    }
    auto kernel = std::make_shared<kernel_session>(env_, record.id, std::move(*spec), record.env,
                                                   record.session);
    // Now, not once the session's strand runs: its contexts are restored right after this.
    kernel->assign_owner(record.owner);
    // Before it is shared: egress() is read unlocked (a context's model shows it).
    if (!record.egress_allow.empty()) kernel->set_egress({record.egress_allow, record.owner});
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || kernels_.contains(record.id))
            return done({nullptr, false, kernel_error::id_taken, "kernel id is in use"});
        kernels_.emplace(kernel->id(), kernel);
    }
    auto adopt_now = [this, kernel, known_spec, done = std::move(done)](
                         kernel_record taken, std::shared_ptr<launcher::session_sandbox> shared) {
        kernel->adopt(
            std::move(taken),
            [this, kernel, known_spec, done](kernel_outcome ready) {
                if (ready.ok() && known_spec) return done({kernel, true, kernel_error::none, {}});
                const std::string error =
                    ready.ok() ? "its kernelspec '" + kernel->kernelspec_name() + "' is gone"
                               : ready.message;
                remove(kernel->id(), [done, error](bool) {
                    done({nullptr, false, kernel_error::start_failed, error});
                });
            },
            std::move(shared));
    };
    const auto sandbox_owner = record.sandbox_owner();
    std::shared_ptr<kernel_session> beside = sandbox_owner.empty() ? nullptr : find(sandbox_owner);
    if (!beside || beside->owner() != record.owner) return adopt_now(std::move(record), nullptr);
    // Its sandbox is read on its strand, after its own adoption there (null: that failed, and
    // this kernel's adoption is refused for a workdir not its own).
    beside->with_sandbox([record = std::move(record), adopt_now = std::move(adopt_now)](
                             std::shared_ptr<launcher::session_sandbox> sandbox) mutable {
        adopt_now(std::move(record), std::move(sandbox));
    });
}

void kernel_manager::create(create_kernel_request request,
                            std::function<void(create_kernel_result)> done) {
    if (request.share_sandbox_of.empty())
        return create_with(std::move(request), nullptr, std::move(done));
    std::shared_ptr<kernel_session> beside = find(request.share_sandbox_of);
    if (!beside || beside->owner() != request.owner.name)
        return done({nullptr, false, kernel_error::not_running,
                     "kernel " + request.share_sandbox_of + " is gone: its sandbox is not shared"});
    // Its sandbox is read on its strand; unsandboxed (null), the new kernel starts as any.
    beside->with_sandbox([this, request = std::move(request), done = std::move(done)](
                             std::shared_ptr<launcher::session_sandbox> sandbox) mutable {
        create_with(std::move(request), std::move(sandbox), std::move(done));
    });
}

void kernel_manager::create_with(create_kernel_request request,
                                 std::shared_ptr<launcher::session_sandbox> sandbox,
                                 std::function<void(create_kernel_result)> done) {
    const std::string name = request.name.empty() ? default_kernel_name() : request.name;
    auto spec = catalog_.find(name);
    if (!spec) {
        if (auto why = catalog_.refusal(name))
            return done({nullptr, false, kernel_error::kernelspec_refused,
                         "kernelspec '" + name + "' is not offered here: " + *why});
        return done({nullptr, false, kernel_error::no_such_kernelspec,
                     "no such kernelspec: '" + name + "'"});
    }

    const auto asked_at = std::chrono::steady_clock::now();
    auto claimed = [this, asked_at](const char* source) {
        env_.metrics.claim_seconds.with({source}).observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - asked_at).count());
    };
    std::optional<create_kernel_result> answer;  // decided under the lock, given outside it
    std::shared_ptr<kernel_session> fresh;
    std::vector<std::shared_ptr<kernel_session>> evicted;  // kept kernels that gave way
    {
        std::lock_guard lock(mutex_);
        auto existing =
            request.kernel_id.empty() ? kernels_.end() : kernels_.find(request.kernel_id);
        if (stopping_) {
            answer = {nullptr, false, kernel_error::shutting_down, "the server is shutting down"};
        } else if (existing != kernels_.end()) {
            // Idempotent create: the same id again is the same kernel, for its owner.
            const auto& k = existing->second;
            if (!request.owner.may_use(k->owner()))
                answer = {nullptr, false, kernel_error::id_taken,
                          "kernel id " + request.kernel_id + " is taken"};
            else if (k->kernelspec_name() != spec->name)
                answer = {nullptr, false, kernel_error::id_taken,
                          "kernel " + request.kernel_id + " exists with kernelspec '" +
                              k->kernelspec_name() + "'"};
            else
                answer = {k, false, kernel_error::none, {}};
        } else if (evicted = make_room(request.owner); auto refusal = over_limit(request.owner)) {
            answer = {nullptr, false, refusal->error, refusal->message};
        } else {
            // A pooled kernel answers already; one asked for with its own id or environment
            // cannot be pre-started, so it starts fresh. Both happen under the lock, so the
            // limits hold under concurrent creates.
            std::shared_ptr<kernel_session> pooled;
            if (request.kernel_id.empty() && request.env.empty() && request.egress_allow.empty() &&
                request.share_sandbox_of.empty() && pool_.target(spec->name) > 0) {
                pooled = pool_.claim(spec->name);
                env_.metrics.pool_claims.with({spec->name, pooled ? "hit" : "miss"}).inc();
            }
            if (pooled) {
                pooled->mark_claimed();
                claimed("pool");
                answer = {pooled, true, kernel_error::none, {}};
            } else {
                std::string id =
                    request.kernel_id.empty() ? kernelproto::new_uuid() : request.kernel_id;
                culled_.forget(id);
                pooled = fresh = std::make_shared<kernel_session>(env_, id, std::move(*spec),
                                                                  std::move(request.env));
                if (!request.egress_allow.empty())
                    fresh->set_egress({std::move(request.egress_allow), request.owner.name});
                if (sandbox) fresh->share_sandbox(std::move(sandbox));
            }
            pooled->assign_owner(request.owner.name);
            kernels_.emplace(pooled->id(), pooled);
        }
    }
    for (auto& k : evicted) {
        env_.log.info("kernel " + k->id() + " was kept for reuse; it gives way to a new kernel");
        k->shutdown([] {}, "kept kernel shut down to make room");
    }
    if (answer) return done(std::move(*answer));
    fresh->start([this, fresh, claimed, done = std::move(done)](kernel_outcome started) {
        if (started.ok()) {
            claimed("fresh");
            return done({fresh, true, kernel_error::none, {}});
        }
        const std::string error = started.message;
        // A kernel that never became ready is not kept: clean it up, then answer.
        remove(fresh->id(), [done, error](bool) {
            done({nullptr, false, kernel_error::start_failed, error});
        });
    });
}

// Called with mutex_ held. Pending starts are in kernels_ already, so they count.
std::optional<kernel_outcome> kernel_manager::over_limit(const user& who) const {
    // The user's own limit first: when both apply, it is the one they can do something about.
    if (who.max_kernels > 0) {
        std::size_t mine = 0;
        for (const auto& [id, k] : kernels_)
            if (k->owner() == who.name) ++mine;
        if (mine >= who.max_kernels)
            return kernel_outcome{
                kernel_error::user_over_limit,
                "user '" + who.name + "' already has " + std::to_string(mine) +
                    " kernels, the limit: shut one down to start another (DELETE "
                    "/api/kernels/{id}, or DELETE /v1/contexts/{id} for a context's kernel)"};
    }
    if (max_kernels_ > 0 && kernels_.size() >= max_kernels_)
        return kernel_outcome{kernel_error::server_over_limit,
                              "the server runs its maximum of " + std::to_string(max_kernels_) +
                                  " kernels (--max-kernels); retry when others have finished"};
    return std::nullopt;
}

std::vector<std::shared_ptr<kernel_session>> kernel_manager::make_room(const user& who) {
    std::vector<std::shared_ptr<kernel_session>> out;
    if (!over_limit(who)) return out;
    // Only when giving way makes the create possible: a refusal must not cost anyone a kernel.
    std::size_t mine = 0;
    for (const auto& [id, k] : kernels_)
        if (k->owner() == who.name) ++mine;
    if (who.max_kernels > 0 && mine - kept_.count(who.name) >= who.max_kernels) return out;
    if (max_kernels_ > 0 && kernels_.size() - kept_.size() >= max_kernels_) return out;
    while (over_limit(who)) {
        // The user's own kept kernels first; for the server's limit, then anyone's.
        auto victim = kept_.evict(who.name);
        if (!victim) victim = kept_.evict();
        if (!victim) break;
        auto it = kernels_.find(victim->id);
        if (it == kernels_.end()) continue;
        out.push_back(it->second);
        kernels_.erase(it);
    }
    return out;
}

void kernel_manager::forget_locked(const std::shared_ptr<kernel_session>& kernel) {
    auto it = kernels_.find(kernel->id());
    if (it != kernels_.end() && it->second == kernel) kernels_.erase(it);
    kept_.forget(kernel->id());
}

bool kernel_manager::keep(const std::shared_ptr<kernel_session>& kernel, std::size_t uses) {
    const auto now = clock_();
    if (kernel->state() != kernel_state::running) return false;
    // Its network was granted to one context: the owner's next context may not ask for it.
    if (!kernel->egress().empty()) return false;
    // Its files are another kernel's, which may still use them.
    if (kernel->shares_sandbox()) return false;
    const auto activity = kernel->activity();
    if (!may_reuse(uses, activity.started_at, now, reuse_.limits)) return false;
    std::lock_guard lock(mutex_);
    if (stopping_ || kernels_.find(kernel->id()) == kernels_.end()) return false;
    if (!kept_.put({kernel->id(), kernel->owner(), kernel->kernelspec_name(), uses,
                    activity.started_at, now, false}))
        return false;
    kernel->hold(kernel_holder::keep);
    return true;
}

bool kernel_manager::kept_ready(const std::shared_ptr<kernel_session>& kernel) {
    std::lock_guard lock(mutex_);
    const bool ready = kept_.mark_ready(kernel->id());
    env_.metrics.policy_resets.with({ready ? "ready" : "gave_way"}).inc();
    return ready;
}

kept_claim kernel_manager::claim_kept(const user& owner, const std::string& kernelspec) {
    const std::string name = kernelspec.empty() ? default_kernel_name() : kernelspec;
    std::vector<std::shared_ptr<kernel_session>> spent;  // died or aged while kept
    kept_claim claim;
    {
        std::lock_guard lock(mutex_);
        while (auto k = kept_.take(owner.name, name)) {
            auto it = kernels_.find(k->id);
            if (it == kernels_.end()) continue;  // culled or deleted meanwhile
            auto kernel = it->second;
            if (kernel->state() != kernel_state::running ||
                !may_reuse(k->uses, k->started_at, clock_(), reuse_.limits)) {
                kernels_.erase(it);
                spent.push_back(std::move(kernel));
                continue;
            }
            kernel->mark_claimed();
            claim = {std::move(kernel), k->uses};
            break;
        }
    }
    for (auto& k : spent) k->shutdown([] {}, "kept kernel past its recycling limits");
    env_.metrics.reuse_claims.with({claim.kernel ? "hit" : "miss"}).inc();
    return claim;
}

std::shared_ptr<kernel_session> kernel_manager::find_for(const std::string& id,
                                                         const user& who) const {
    auto k = find(id);
    return k && who.may_use(k->owner()) ? k : nullptr;
}

std::vector<std::shared_ptr<kernel_session>> kernel_manager::list_for(const user& who) const {
    auto all = list();
    std::erase_if(all, [&](const auto& k) { return !who.may_use(k->owner()); });
    return all;
}

std::shared_ptr<kernel_session> kernel_manager::find(const std::string& id) const {
    std::lock_guard lock(mutex_);
    auto it = kernels_.find(id);
    return it == kernels_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<kernel_session>> kernel_manager::list() const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<kernel_session>> out;
    out.reserve(kernels_.size());
    for (auto& [id, k] : kernels_) out.push_back(k);
    return out;
}

void kernel_manager::remove(const std::string& id, std::function<void(bool)> done) {
    auto kernel = find(id);
    if (!kernel) {
        done(false);
        return;
    }
    kernel->shutdown([this, kernel, done = std::move(done)] {
        {
            std::lock_guard lock(mutex_);
            forget_locked(kernel);
        }
        done(true);
    });
}

void kernel_manager::shutdown_all(std::function<void()> done) {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    struct stop_state {
        std::function<void()> done;
        std::atomic<bool> finished{false};
        std::atomic<bool> pool_stopped{false};
        std::atomic<int> parts_left{2};  // the warm pool's kernels, the registered ones
        void finish() {
            if (!finished.exchange(true)) done();
        }
    };
    auto stop = std::make_shared<stop_state>();
    stop->done = std::move(done);
    const auto bound =
        env_.settings.shutdown_wait + env_.settings.kill_grace + env_.settings.stop_margin;
    auto deadline = std::make_shared<boost::asio::steady_timer>(cull_timer_.get_executor(), bound);
    deadline->async_wait([this, stop, deadline, bound](boost::system::error_code ec) {
        if (ec || stop->finished) return;
        env_.log.warn("stopping: " + std::to_string(bound.count()) + " ms on, still waiting for " +
                      still_stopping() +
                      (stop->pool_stopped ? "" : " and the warm pool's kernels") +
                      "; going on without them (with --state-dir their records stay, and the "
                      "next start adopts or reaps them)");
        stop->finish();
    });
    auto part_done = [stop, deadline] {
        if (--stop->parts_left > 0) return;
        // On the timer's strand: this runs on a kernel's, and a timer is not thread-safe.
        boost::asio::post(deadline->get_executor(), [deadline] { deadline->cancel(); });
        stop->finish();
    };
    // Both at once, so that each kernel's stop fits the bound: the pool first only to stop its
    // refills (its stopping flag is set before this call returns).
    pool_.shutdown([stop, part_done] {
        stop->pool_stopped = true;
        part_done();
    });
    shutdown_registered(part_done);
}

std::string kernel_manager::still_stopping() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& [id, kernel] : kernels_)
        out +=
            (out.empty() ? "" : ", ") + id + " (" + std::string(to_string(kernel->state())) + ")";
    return out.empty() ? "no registered kernel" : out;
}

void kernel_manager::shutdown_registered(std::function<void()> done) {
    std::vector<std::shared_ptr<kernel_session>> all;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        for (auto& [id, k] : kernels_) all.push_back(k);
    }
    boost::asio::post(cull_timer_.get_executor(), [this] { cull_timer_.cancel(); });
    if (all.empty()) {
        done();
        return;
    }
    auto remaining = std::make_shared<std::atomic<std::size_t>>(all.size());
    auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
    for (auto& k : all)
        remove(k->id(), [remaining, shared_done](bool) {
            if (--*remaining == 0) (*shared_done)();
        });
}

}  // namespace callisto::gateway::kernels
