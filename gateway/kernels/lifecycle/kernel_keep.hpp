#pragma once
// Kernels kept for reuse: after serving a reuse-policy context or one-shot run, a kernel that
// was reset waits here for the same owner's next one. Only ids and bookkeeping, no kernels,
// so it is pure and unit-tested; the kernel_manager owns the kernels. Not thread-safe: the
// kernel_manager calls it under its lock.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace callisto::gateway::kernels {

struct kept_kernel {
    std::string id;
    std::string owner;
    std::string kernelspec;
    std::size_t uses = 0;  // contexts or one-shot runs it has served
    std::chrono::system_clock::time_point started_at;
    std::chrono::system_clock::time_point kept_at;
    // False while its reset runs: not handed out yet, but already able to give way.
    bool ready = true;
};

class kernel_keep {
public:
    // per_owner: how many kernels one user may have waiting; 0 keeps none.
    explicit kernel_keep(std::size_t per_owner) : per_owner_(per_owner) {}

    // False when the owner already has per_owner kernels waiting: shut this one down instead.
    bool put(kept_kernel k);
    // The reset answered: from now on take() may hand it out. False when it is no longer
    // here (it gave way meanwhile).
    bool mark_ready(const std::string& id);
    // The most recently kept ready kernel of this owner and kernelspec, removed from the keep.
    std::optional<kept_kernel> take(const std::string& owner, const std::string& kernelspec);
    // The owner's longest-waiting kernel (any kernelspec), or anyone's when owner is empty:
    // what gives way when a limit is reached.
    std::optional<kept_kernel> evict(const std::string& owner = {});
    // A kept kernel that went away by other means (culled, deleted): forget it.
    void forget(const std::string& id);
    bool contains(const std::string& id) const;
    std::size_t count(const std::string& owner) const;
    std::size_t size() const { return kept_.size(); }

private:
    std::size_t per_owner_;
    std::vector<kept_kernel> kept_;  // oldest first
};

}  // namespace callisto::gateway::kernels
