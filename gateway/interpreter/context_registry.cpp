#include "gateway/interpreter/context_registry.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "gateway/interpreter/kernel_reset.hpp"
#include "gateway/languages/kernel_languages.hpp"
#include "kernelproto/ids.hpp"

namespace callisto::gateway::interpreter {

namespace fs = std::filesystem;

context_registry::context_registry(boost::asio::io_context& ioc, kernels::kernel_manager& kernels,
                                   interpreter_settings settings, logger log)
    : ioc_(ioc),
      kernels_(kernels),
      settings_(std::move(settings)),
      log_(std::move(log)),
      culled_(settings_.culled_retention) {}

nlohmann::json context_registry::languages() const {
    return languages::languages_document(kernels_.kernelspecs(), kernels_.default_kernel_name());
}

std::optional<std::string> context_registry::choose_kernel(context_request& request) const {
    if (!request.language) return std::nullopt;
    const std::string language(languages::to_string(*request.language));
    const auto& specs = kernels_.kernelspecs();
    if (request.kernel.empty()) {
        auto kernel =
            languages::kernel_for(*request.language, specs, kernels_.default_kernel_name());
        if (!kernel)
            return "no kernel installed here runs " + language +
                   "; GET /v1/languages lists what does";
        request.kernel = *kernel;
        return std::nullopt;
    }
    for (const auto& spec : specs)
        if (spec.name == request.kernel && !languages::kernel_runs(spec, *request.language))
            return "the kernel '" + request.kernel + "' does not run " + language +
                   "; GET /v1/languages lists which kernel does";
    return std::nullopt;  // an unknown kernel is the kernel manager's 404
}

languages::kernel_dialect context_registry::dialect_of_kernel(const std::string& kernel) const {
    for (const auto& spec : kernels_.kernelspecs())
        if (spec.name == kernel) return languages::dialect_of(spec.language);
    return languages::kernel_dialect::python;
}

void context_registry::create(const context_request& request, const user& owner,
                              std::function<void(create_context_result)> done,
                              std::string given_id) {
    kernels::kernel_policy policy = request.policy.value_or(settings_.default_policy);
    std::shared_ptr<interpreter_context> files_of;  // the context whose files it works in
    if (!request.share_files_with.empty()) {
        files_of = find_for(request.share_files_with, owner);
        if (!files_of)
            return done(
                {nullptr, kernels::kernel_error::not_running,
                 "context " + request.share_files_with + " is gone: its files cannot be shared"});
        policy = kernels::kernel_policy::fresh;  // a kept kernel would bring its own files
    }
    context_options options{.policy = policy,
                            .one_shot = request.one_shot,
                            .via_mcp = request.via_mcp,
                            .via_e2b = request.via_e2b,
                            .shares_files_of = files_of ? files_of->id() : std::string(),
                            .start_dir = request.start_dir,
                            .home = request.home};
    auto open_context = [this, owner_name = owner.name, options, files_of,
                         given_id = std::move(given_id), done = std::move(done)](
                            kernels::create_kernel_result r, std::size_t uses) mutable {
        if (!r.kernel) return done({nullptr, r.error, r.message});
        options.kernel_uses = uses;
        const std::string id = given_id.empty() ? kernelproto::new_uuid() : given_id;
        fs::path workdir;
        bool chdir_kernel = false;
        if (files_of) {
            // Sandboxed, the kernel's /work is that sandbox's; unsandboxed, it goes there.
            workdir = files_of->workdir();
            chdir_kernel = settings_.kernel_workdir_root.empty();
        } else if (!settings_.kernel_workdir_root.empty()) {
            workdir = settings_.kernel_workdir_root / r.kernel->id();  // the sandbox's /work
        } else {
            // Unsandboxed kernels start in their runtime dir, which a restart replaces: give
            // the context a directory of its own and send the kernel there.
            workdir = settings_.context_root / id;
            std::error_code ec;
            fs::create_directories(workdir, ec);
            if (ec) {
                kernels_.remove(r.kernel->id(), [](bool) {});
                return done({nullptr, kernels::kernel_error::start_failed,
                             "cannot create the context's directory: " + ec.message()});
            }
            chdir_kernel = true;
        }
        auto context = std::make_shared<interpreter_context>(
            ioc_, id, owner_name, r.kernel, workdir, chdir_kernel, options, settings_,
            log_.component("context")
                .with("context_id", id)
                .with("kernel_id", r.kernel->id())
                .with("user", owner_name));
        add(context);
        log_.info("context " + id + " (" + std::string(to_string(options.policy)) +
                  (options.one_shot ? ", one-shot" : "") +
                  (files_of ? ", in the files of context " + files_of->id() : "") + ") on kernel " +
                  r.kernel->id() + " (use " + std::to_string(uses) + ") for " + owner_name);
        done({context, kernels::kernel_error::none, {}});
    };

    // A kept kernel never had network (kernel_manager::keep): one that may needs a fresh one.
    if (policy == kernels::kernel_policy::reuse && request.network_allow.empty()) {
        if (auto kept = kernels_.claim_kept(owner, request.kernel); kept.kernel)
            return open_context({kept.kernel, false, kernels::kernel_error::none, {}},
                                kept.uses + 1);
    }
    kernels::create_kernel_request kr;
    kr.owner = owner;
    kr.name = request.kernel;
    kr.egress_allow = request.network_allow;
    if (files_of) kr.share_sandbox_of = files_of->kernel()->id();
    kernels_.create(std::move(kr), [open_context = std::move(open_context)](
                                       kernels::create_kernel_result r) mutable {
        open_context(std::move(r), 1);
    });
}

void context_registry::add(const std::shared_ptr<interpreter_context>& context) {
    context->on_kernel_gone([this, weak = std::weak_ptr(context)](std::string reason) {
        if (auto c = weak.lock()) forget(c, reason);
    });
    {
        std::lock_guard lock(mutex_);
        contexts_[context->id()] = context;
    }
    context->open();
}

void context_registry::restore(context_record_store& records) {
    auto loaded = records.load();
    for (const auto& problem : loaded.problems)
        log_.warn("unreadable context record removed: " + problem);
    for (const auto& record : loaded.records) {
        auto kernel = kernels_.find(record.kernel_id);
        if (!kernel || kernel->owner() != record.owner) {
            log_.info("context " + record.id + " of " + record.owner +
                      " is not restored: its kernel " + record.kernel_id + " was not adopted");
            records.remove(record.id);
            continue;
        }
        auto context = std::make_shared<interpreter_context>(
            ioc_, record.id, record.owner, kernel, record.workdir, record.chdir_kernel,
            context_options{.policy = record.policy,
                            .kernel_uses = record.kernel_uses,
                            .via_e2b = record.via_e2b,
                            .shares_files_of = record.shares_files_of,
                            .start_dir = record.start_dir,
                            .home = record.home},
            settings_,
            log_.component("context")
                .with("context_id", record.id)
                .with("kernel_id", kernel->id())
                .with("user", record.owner));
        try {
            context->restore(record);
        } catch (const std::exception& e) {
            log_.warn("context " + record.id + " is not restored: " + e.what());
            records.remove(record.id);
            continue;
        }
        add(context);
        log_.info("context " + record.id + " of " + record.owner + " restored on kernel " +
                  kernel->id() + " with " + std::to_string(record.executions.size()) +
                  " executions");
    }
}

std::shared_ptr<interpreter_context> context_registry::find_for(const std::string& id,
                                                                const user& who) const {
    std::lock_guard lock(mutex_);
    if (paused_.find(id)) return nullptr;  // paused, or resuming and not ready yet
    auto it = contexts_.find(id);
    if (it == contexts_.end() || !who.may_use(it->second->owner())) return nullptr;
    return it->second;
}

std::vector<std::shared_ptr<interpreter_context>> context_registry::list_for(
    const user& who) const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<interpreter_context>> out;
    for (auto& [id, c] : contexts_)
        if (who.may_use(c->owner()) && !paused_.find(id)) out.push_back(c);
    return out;
}

std::optional<context_registry::paused_view> context_registry::paused_for(const std::string& id,
                                                                          const user& who) const {
    std::lock_guard lock(mutex_);
    const auto* record = paused_.find(id);
    if (!record || !who.may_use(record->owner)) return std::nullopt;
    return paused_view{*record, paused_.resuming(id)};
}

std::vector<context_registry::paused_view> context_registry::list_paused_for(
    const user& who) const {
    std::lock_guard lock(mutex_);
    std::vector<paused_view> out;
    for (const auto* record : paused_.all())
        if (who.may_use(record->owner)) out.push_back({*record, paused_.resuming(record->id)});
    return out;
}

std::size_t context_registry::paused_count() const {
    std::lock_guard lock(mutex_);
    return paused_.size();
}

std::string context_registry::pause(const std::shared_ptr<interpreter_context>& context,
                                    paused_record record) {
    {
        // Under the lock, so no request finds the live context once it is paused: one that
        // found it just before gets "the context is closed" (409) from it.
        std::lock_guard lock(mutex_);
        auto it = contexts_.find(context->id());
        if (it == contexts_.end() || it->second != context)
            return "the context was deleted meanwhile";
        if (context->busy()) return "an execution was queued meanwhile; the context was not paused";
        if (!paused_.add(record)) return "the context is paused already";
        contexts_.erase(it);
    }
    if (settings_.paused_records) {
        if (auto why = settings_.paused_records->save(record); !why.empty())
            log_.warn("paused context " + record.id +
                      " is not recorded (it will not outlive this gateway): " + why);
    }
    context->close("the context was paused");
    // Its kernel goes (never kept for reuse: freeing its memory is the point), and its
    // workdir with it: the snapshot holds its files.
    kernels_.remove(context->kernel()->id(), [this, context](bool) { remove_own_dir(context); });
    log_.info("context " + record.id + " of " + record.owner + " paused (snapshot " +
              record.snapshot_id + "), its kernel " + context->kernel()->id() + " shut down");
    return {};
}

paused_table::resume_start context_registry::start_resume(const std::string& id, const user& who,
                                                          paused_table::waiter w,
                                                          paused_record* record) {
    std::lock_guard lock(mutex_);
    const auto* found = paused_.find(id);
    if (!found || !who.may_use(found->owner)) return paused_table::resume_start::unknown;
    if (record) *record = *found;
    return paused_.start_resume(id, std::move(w));
}

void context_registry::finish_resume(const std::string& id,
                                     const std::shared_ptr<interpreter_context>& made,
                                     const paused_table::outcome& how) {
    std::vector<paused_table::waiter> waiters;
    {
        std::lock_guard lock(mutex_);
        waiters = paused_.finish_resume(id, made != nullptr);
    }
    if (made && settings_.paused_records) settings_.paused_records->remove(id);
    for (auto& w : waiters) w(how);
}

paused_table::remove_result context_registry::remove_paused(const std::string& id, const user& who,
                                                            paused_record* removed) {
    {
        std::lock_guard lock(mutex_);
        const auto* found = paused_.find(id);
        if (!found || !who.may_use(found->owner)) return paused_table::remove_result::unknown;
        auto r = paused_.remove(id, removed);
        if (r != paused_table::remove_result::removed) return r;
    }
    if (settings_.paused_records) settings_.paused_records->remove(id);
    return paused_table::remove_result::removed;
}

std::vector<paused_record> context_registry::remove_expired(
    std::chrono::system_clock::time_point now) {
    std::vector<paused_record> removed;
    {
        std::lock_guard lock(mutex_);
        for (const auto& id : paused_.expired(now, settings_.paused_ttl)) {
            paused_record r;
            if (paused_.remove(id, &r) == paused_table::remove_result::removed)
                removed.push_back(std::move(r));
        }
    }
    if (settings_.paused_records)
        for (const auto& r : removed) settings_.paused_records->remove(r.id);
    return removed;
}

std::vector<std::string> context_registry::restore_paused(
    const std::function<bool(const paused_record&)>& snapshot_exists) {
    std::vector<std::string> kept;
    if (!settings_.paused_records) return kept;
    auto loaded = settings_.paused_records->load(snapshot_exists);
    for (const auto& problem : loaded.problems)
        log_.warn("paused context dropped, its record removed: " + problem);
    for (auto& record : loaded.records) {
        std::shared_ptr<interpreter_context> live;
        {
            std::lock_guard lock(mutex_);
            // A gateway stopped in the middle of a resume left both: the paused state is the
            // one known whole.
            if (auto it = contexts_.find(record.id); it != contexts_.end()) {
                live = it->second;
                contexts_.erase(it);
            }
            if (!paused_.add(record)) continue;
        }
        if (live) {
            live->close("the context is paused");
            kernels_.remove(live->kernel()->id(), [this, live](bool) { remove_own_dir(live); });
        }
        kept.push_back(record.snapshot_id);
        log_.info("paused context " + record.id + " of " + record.owner + " restored (snapshot " +
                  record.snapshot_id + ")");
    }
    return kept;
}

std::optional<kernels::culled_kernel> context_registry::culled_for(const std::string& id,
                                                                   const user& who) const {
    auto entry = culled_.find(id, kernels::wall_clock::now());
    if (!entry || !who.may_use(entry->owner)) return std::nullopt;
    return entry;
}

void context_registry::stop() {
    stopping_ = true;
    std::vector<std::shared_ptr<interpreter_context>> open;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, context] : contexts_) open.push_back(context);
    }
    for (auto& context : open) context->close("the server is stopping");
}

void context_registry::remove_all() {
    std::map<std::string, std::shared_ptr<interpreter_context>> all;
    {
        std::lock_guard lock(mutex_);
        all.swap(contexts_);
    }
    for (auto& [id, context] : all) remove_own_dir(context);
}

void context_registry::remove(const std::shared_ptr<interpreter_context>& context,
                              std::function<void()> done) {
    {
        // Once: two DELETEs racing, or a DELETE racing a one-shot's own removal, must not
        // release the kernel twice (a second reset could wipe its next context).
        std::lock_guard lock(mutex_);
        auto it = contexts_.find(context->id());
        if (it == contexts_.end() || it->second != context) return done();
        contexts_.erase(it);
    }
    const bool busy = context->busy();  // before close() fails what is queued
    context->close("the context was deleted");
    if (busy) {
        kernels_.remove(context->kernel()->id(), [this, context, done = std::move(done)](bool) {
            remove_own_dir(context);
            done();
        });
        return;
    }
    release_kernel(context, std::move(done));
}

void context_registry::remove_later(const std::shared_ptr<interpreter_context>& context) {
    boost::asio::post(ioc_, [this, context] { remove(context, [] {}); });
}

void context_registry::release_kernel(const std::shared_ptr<interpreter_context>& context,
                                      std::function<void()> done) {
    auto kernel = context->kernel();
    auto destroy = [this, context, kernel](std::function<void()> then) {
        kernels_.remove(kernel->id(), [this, context, then = std::move(then)](bool) {
            remove_own_dir(context);
            then();
        });
    };
    // Kept, it would be reset, and a reset empties the files other contexts work in.
    if (stopping_ || context->options().policy != kernels::kernel_policy::reuse ||
        files_shared(*context) || kernel->activity().execution_state != "idle" ||
        !kernels::may_reuse(context->options().kernel_uses, kernel->activity().started_at,
                            kernels::wall_clock::now(), kernels_.recycling()))
        return destroy(std::move(done));
    // In the keep while it resets (not handed out, but able to give way to a limit), and
    // answered as deleted once the reset has run: the owner's next context gets it.
    remove_own_dir(context);
    if (!kernels_.keep(kernel, context->options().kernel_uses)) return destroy(std::move(done));
    const bool sandboxed = !settings_.kernel_workdir_root.empty();
    auto finished = std::make_shared<std::function<void()>>(std::move(done));
    auto reset = [this, context, kernel, destroy, sandboxed, finished] {
        kernel_reset::run(
            ioc_, kernel, context->dialect(), sandboxed ? "/work" : settings_.context_root.string(),
            sandboxed, settings_.reset_timeout,
            [this, context, kernel, destroy, finished](bool ok) {
                if (!ok) {
                    log_.warn("kernel " + kernel->id() + " did not reset; destroying it");
                    return destroy(std::move(*finished));
                }
                if (kernels_.kept_ready(kernel))
                    log_.info("kernel " + kernel->id() + " reset and kept for " + context->owner());
                (*finished)();
            });
    };
    // Renewed first, whatever its language and however it started: a new process (a fork of
    // the zygote, else an exec) in a new sandbox, so nothing of the last context is left that
    // no reset in the kernel's language can undo (modules, the environment, options, threads,
    // /tmp, start-up files in the workdir). The reset then checks that the kernel runs code.
    kernel->renew([this, kernel, destroy, reset, finished](kernels::kernel_outcome r) {
        if (r.ok()) return reset();
        log_.warn("kernel " + kernel->id() + " was not renewed (" + r.message + "); destroying it");
        destroy(std::move(*finished));
    });
}

void context_registry::forget(const std::shared_ptr<interpreter_context>& context,
                              const std::string& reason) {
    {
        std::lock_guard lock(mutex_);
        auto it = contexts_.find(context->id());
        if (it == contexts_.end() || it->second != context) return;
        contexts_.erase(it);
    }
    const user owner{context->owner()};
    if (auto culled = kernels_.culled_for(context->kernel()->id(), owner))
        culled_.record(context->id(), *culled, culled->culled_at);
    log_.info("context " + context->id() + " closed with its kernel: " + reason);
    remove_own_dir(context);
}

bool context_registry::files_shared(const interpreter_context& context) const {
    std::lock_guard lock(mutex_);
    return std::any_of(contexts_.begin(), contexts_.end(), [&](const auto& entry) {
        return entry.second->options().shares_files_of == context.id();
    });
}

void context_registry::remove_own_dir(const std::shared_ptr<interpreter_context>& context) const {
    // Sandboxed contexts use their kernel's session workdir, which goes with the kernel (the
    // last one, when kernels share it); a context in another's files has none of its own.
    if (!settings_.kernel_workdir_root.empty() || !context->options().shares_files_of.empty())
        return;
    std::error_code ec;
    fs::remove_all(context->workdir(), ec);
}

}  // namespace callisto::gateway::interpreter
