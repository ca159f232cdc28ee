#include "gateway/interpreter/context_registry.hpp"

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

void context_registry::create(const context_request& request, const user& owner,
                              std::function<void(create_context_result)> done) {
    const kernels::kernel_policy policy = request.policy.value_or(settings_.default_policy);
    auto open_context = [this, owner_name = owner.name, policy, one_shot = request.one_shot,
                         via_mcp = request.via_mcp, done = std::move(done)](
                            kernels::create_kernel_result r, std::size_t uses) {
        if (!r.kernel) return done({nullptr, r.error, r.message});
        const std::string id = kernelproto::new_uuid();
        fs::path workdir;
        bool chdir_kernel = false;
        if (!settings_.kernel_workdir_root.empty()) {
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
            ioc_, id, owner_name, r.kernel, workdir, chdir_kernel,
            context_options{policy, one_shot, via_mcp, uses}, settings_,
            log_.component("context")
                .with("context_id", id)
                .with("kernel_id", r.kernel->id())
                .with("user", owner_name));
        add(context);
        log_.info("context " + id + " (" + std::string(to_string(policy)) +
                  (one_shot ? ", one-shot" : "") + ") on kernel " + r.kernel->id() + " (use " +
                  std::to_string(uses) + ") for " + owner_name);
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
    kernels_.create(std::move(kr),
                    [open_context = std::move(open_context)](kernels::create_kernel_result r) {
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
            context_options{record.policy, false, false, record.kernel_uses}, settings_,
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
    auto it = contexts_.find(id);
    if (it == contexts_.end() || !who.may_use(it->second->owner())) return nullptr;
    return it->second;
}

std::vector<std::shared_ptr<interpreter_context>> context_registry::list_for(
    const user& who) const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<interpreter_context>> out;
    for (auto& [id, c] : contexts_)
        if (who.may_use(c->owner())) out.push_back(c);
    return out;
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
    if (stopping_ || context->options().policy != kernels::kernel_policy::reuse ||
        kernel->activity().execution_state != "idle" ||
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

void context_registry::remove_own_dir(const std::shared_ptr<interpreter_context>& context) const {
    // Sandboxed contexts use their kernel's session workdir, which goes with the kernel.
    if (!settings_.kernel_workdir_root.empty()) return;
    std::error_code ec;
    fs::remove_all(context->workdir(), ec);
}

}  // namespace callisto::gateway::interpreter
