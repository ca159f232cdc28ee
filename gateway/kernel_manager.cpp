#include "gateway/kernel_manager.hpp"

#include <atomic>

#include "kernelproto/ids.hpp"

namespace callisto::gateway {

kernel_manager::kernel_manager(kernel_environment& env,
                               const launcher::kernelspec_catalog& catalog)
    : env_(env), catalog_(catalog) {}

std::string kernel_manager::default_kernel_name() const {
    return env_.config.default_kernel.empty() ? catalog_.default_name()
                                              : env_.config.default_kernel;
}

void kernel_manager::create(create_kernel_request request,
                            std::function<void(create_kernel_result)> done) {
    const std::string name = request.name.empty() ? default_kernel_name() : request.name;
    auto spec = catalog_.find(name);
    if (!spec) {
        done({nullptr, false, 404, "no such kernelspec: '" + name + "'"});
        return;
    }
    std::shared_ptr<kernel_session> kernel;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            done({nullptr, false, 503, "the server is shutting down"});
            return;
        }
        if (!request.kernel_id.empty()) {
            if (auto it = kernels_.find(request.kernel_id); it != kernels_.end()) {
                if (it->second->kernelspec_name() != spec->name) {
                    done({nullptr, false, 409,
                          "kernel " + request.kernel_id + " exists with kernelspec '" +
                              it->second->kernelspec_name() + "'"});
                    return;
                }
                done({it->second, false, 200, {}});
                return;
            }
        }
        std::string id = request.kernel_id.empty() ? kernelproto::new_uuid() : request.kernel_id;
        kernel = std::make_shared<kernel_session>(env_, id, std::move(*spec),
                                                  std::move(request.env));
        kernels_.emplace(id, kernel);
    }
    kernel->start([this, kernel, done = std::move(done)](std::string error) {
        if (error.empty()) {
            done({kernel, true, 201, {}});
            return;
        }
        // A kernel that never became ready is not kept: clean it up, then answer.
        remove(kernel->id(), [done, error](bool) { done({nullptr, false, 500, error}); });
    });
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
            auto it = kernels_.find(kernel->id());
            if (it != kernels_.end() && it->second == kernel) kernels_.erase(it);
        }
        done(true);
    });
}

void kernel_manager::shutdown_all(std::function<void()> done) {
    std::vector<std::shared_ptr<kernel_session>> all;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        for (auto& [id, k] : kernels_) all.push_back(k);
    }
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

}  // namespace callisto::gateway
