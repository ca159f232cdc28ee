#include "gateway/kernels/lifecycle/kernel_keep.hpp"

#include <algorithm>

namespace callisto::gateway::kernels {

bool kernel_keep::put(kept_kernel k) {
    const auto mine = std::count_if(kept_.begin(), kept_.end(),
                                    [&](const kept_kernel& e) { return e.owner == k.owner; });
    if (static_cast<std::size_t>(mine) >= per_owner_ || contains(k.id)) return false;
    kept_.push_back(std::move(k));
    return true;
}

std::optional<kept_kernel> kernel_keep::take(const std::string& owner,
                                             const std::string& kernelspec) {
    // Newest first: the most recently used kernel is the least likely to be culled soon.
    auto it = std::find_if(kept_.rbegin(), kept_.rend(), [&](const kept_kernel& e) {
        return e.ready && e.owner == owner && e.kernelspec == kernelspec;
    });
    if (it == kept_.rend()) return std::nullopt;
    kept_kernel k = std::move(*it);
    kept_.erase(std::next(it).base());
    return k;
}

std::optional<kept_kernel> kernel_keep::evict(const std::string& owner) {
    auto it = std::find_if(kept_.begin(), kept_.end(),
                           [&](const kept_kernel& e) { return owner.empty() || e.owner == owner; });
    if (it == kept_.end()) return std::nullopt;
    kept_kernel k = std::move(*it);
    kept_.erase(it);
    return k;
}

bool kernel_keep::mark_ready(const std::string& id) {
    auto it =
        std::find_if(kept_.begin(), kept_.end(), [&](const kept_kernel& e) { return e.id == id; });
    if (it == kept_.end()) return false;
    it->ready = true;
    return true;
}

void kernel_keep::forget(const std::string& id) {
    std::erase_if(kept_, [&](const kept_kernel& e) { return e.id == id; });
}

std::size_t kernel_keep::count(const std::string& owner) const {
    return static_cast<std::size_t>(std::count_if(
        kept_.begin(), kept_.end(), [&](const kept_kernel& e) { return e.owner == owner; }));
}

bool kernel_keep::contains(const std::string& id) const {
    return std::any_of(kept_.begin(), kept_.end(),
                       [&](const kept_kernel& e) { return e.id == id; });
}

}  // namespace callisto::gateway::kernels
