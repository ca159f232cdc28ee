#include "gateway/interpreter/context_registry.hpp"

#include <sys/stat.h>

#include "kernelproto/ids.hpp"

namespace callisto::gateway::interpreter {

namespace fs = std::filesystem;

context_registry::context_registry(boost::asio::io_context& ioc, kernel_manager& kernels,
                                   interpreter_settings settings, logger log)
    : ioc_(ioc), kernels_(kernels), settings_(std::move(settings)), log_(std::move(log)) {}

void context_registry::create(const context_request& request, const user& owner,
                              std::function<void(create_context_result)> done) {
    create_kernel_request kr;
    kr.owner = owner;
    kr.name = request.kernel;
    kernels_.create(std::move(kr), [this, owner_name = owner.name,
                                    done = std::move(done)](create_kernel_result r) {
        if (!r.kernel) return done({nullptr, r.http_status, r.error});
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
                return done({nullptr, 500, "cannot create the context's directory: " + ec.message()});
            }
            chdir_kernel = true;
        }
        auto context = std::make_shared<interpreter_context>(
            ioc_, id, owner_name, r.kernel, workdir, chdir_kernel, settings_,
            log_.component("context " + id.substr(0, 8)));
        context->open();
        {
            std::lock_guard lock(mutex_);
            contexts_[id] = context;
        }
        log_.info("context " + id + " on kernel " + r.kernel->id() + " for " + owner_name);
        done({context, 201, {}});
    });
}

std::shared_ptr<interpreter_context> context_registry::find_for(const std::string& id,
                                                                const user& who) const {
    std::lock_guard lock(mutex_);
    auto it = contexts_.find(id);
    if (it == contexts_.end() || !who.may_use(it->second->owner())) return nullptr;
    return it->second;
}

std::vector<std::shared_ptr<interpreter_context>> context_registry::list_for(const user& who) const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<interpreter_context>> out;
    for (auto& [id, c] : contexts_)
        if (who.may_use(c->owner())) out.push_back(c);
    return out;
}

void context_registry::remove(const std::shared_ptr<interpreter_context>& context,
                              std::function<void()> done) {
    {
        std::lock_guard lock(mutex_);
        contexts_.erase(context->id());
    }
    context->close("the context was deleted");
    const bool own_dir = settings_.kernel_workdir_root.empty();
    kernels_.remove(context->kernel()->id(), [context, own_dir, done = std::move(done)](bool) {
        if (own_dir) {
            std::error_code ec;
            fs::remove_all(context->workdir(), ec);
        }
        done();
    });
}

}  // namespace callisto::gateway::interpreter
