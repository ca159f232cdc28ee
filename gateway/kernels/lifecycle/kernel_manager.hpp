#pragma once
// The registry of running kernels: creates them from kernelspecs, finds them by id, removes
// them, and shuts them all down when the server stops.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/kernels/lifecycle/culled_kernels.hpp"
#include "gateway/kernels/lifecycle/culling_policy.hpp"
#include "gateway/kernels/lifecycle/kernel_keep.hpp"
#include "gateway/kernels/lifecycle/kernel_policy.hpp"
#include "gateway/kernels/lifecycle/warm_pool.hpp"
#include "gateway/kernels/session/kernel_environment.hpp"
#include "gateway/kernels/session/kernel_error.hpp"
#include "gateway/kernels/session/kernel_session.hpp"
#include "gateway/user.hpp"
#include "launcher/kernelspec/kernelspec_catalog.hpp"

namespace callisto::gateway::kernels {

struct create_kernel_request {
    user owner;             // who asks; their kernel limit applies
    std::string name;       // kernelspec; empty: the default
    std::string kernel_id;  // empty: a fresh uuid; else idempotent create with this id
    std::map<std::string, std::string> env;  // KERNEL_* variables for the kernel
    // What it may reach through the egress proxy (checked by the caller against the
    // ceilings); empty: no network. A kernel with any is started fresh and never kept.
    std::vector<std::string> egress_allow;
    // A kernel of the same owner whose sandbox (uid, workdir) the new one shares: E2B's
    // contexts of one sandbox see one file tree. Started fresh, never kept. Empty: its own.
    std::string share_sandbox_of;
};

struct create_kernel_result {
    std::shared_ptr<kernel_session> kernel;  // null on failure
    bool created = false;                    // false: an existing kernel with this id
    kernel_error error = kernel_error::none;
    std::string message;  // on failure: what happened, for the client
};

struct kept_claim {
    std::shared_ptr<kernel_session> kernel;  // null: none kept
    std::size_t uses = 0;                    // contexts or one-shot runs it served before
};

class kernel_manager {
public:
    using clock_fn = std::function<wall_clock::time_point()>;

    // pool_sizes: kernelspec name -> pre-started kernels to keep ready (empty: no pool).
    // max_kernels: all users together, 0 for no limit (starts still pending count too).
    kernel_manager(kernel_environment& env, const launcher::kernelspec_catalog& catalog,
                   culling_policy culling = {}, std::map<std::string, std::size_t> pool_sizes = {},
                   std::size_t max_kernels = 0, kernel_reuse reuse = {},
                   clock_fn clock = wall_clock::now);

    // Fills the warm pool and starts the culling timer.
    void start();

    // Completion runs on an arbitrary thread.
    void create(create_kernel_request request, std::function<void(create_kernel_result)> done);

    // Takes over a kernel an earlier gateway left running (kernel_session::adopt); done(null
    // kernel, why) when it cannot be, after it was killed and its leftovers removed. A kernel
    // that ran in another's sandbox (record.sandbox_owner()) shares that kernel's again, which
    // must have been adopted first. Completion runs on an arbitrary thread.
    void adopt(kernel_record record, std::function<void(create_kernel_result)> done);

    std::shared_ptr<kernel_session> find(const std::string& id) const;
    std::vector<std::shared_ptr<kernel_session>> list() const;
    // Only what `who` may see: their own kernels, or all for an admin. Others' ids are
    // answered as if they did not exist.
    std::shared_ptr<kernel_session> find_for(const std::string& id, const user& who) const;
    std::vector<std::shared_ptr<kernel_session>> list_for(const user& who) const;

    // The reuse policy. keep(): an idle kernel its owner finished with enters the keep while
    // the caller resets it; false when the recycling limits or the keep's size say no, and
    // the caller removes it. kept_ready(): the reset answered, the kernel waits for its
    // owner's next claim_kept(); false when it gave way meanwhile (it is being shut down).
    // Kept kernels stay registered (they are real processes, listed and culled like any
    // other) but give way, resetting or ready, when a limit is reached.
    bool keep(const std::shared_ptr<kernel_session>& kernel, std::size_t uses);
    bool kept_ready(const std::shared_ptr<kernel_session>& kernel);
    // A kept, idle kernel of this owner and kernelspec ("" : the default), or a null kernel.
    kept_claim claim_kept(const user& owner, const std::string& kernelspec);
    const recycling_limits& recycling() const { return reuse_.limits; }

    // Shuts the kernel down and forgets it; done(false) when there is no such kernel.
    void remove(const std::string& id, std::function<void(bool found)> done);

    // Refuses new kernels from now on and shuts every kernel, pooled ones too, down. done()
    // runs once they all have ended, or, bounded, once the longest stop (shutdown_wait, then
    // kill_grace) and a margin have passed: then a warning names those still going.
    void shutdown_all(std::function<void()> done);

    std::string default_kernel_name() const;
    const std::vector<launcher::kernelspec>& kernelspecs() const { return catalog_.all(); }

    // The warm pool has been full once since start (see warm_pool::filled_once).
    bool pool_filled_once() const { return pool_.filled_once(); }
    // kernelspec -> {ready, target} of the warm pool.
    std::map<std::string, std::pair<std::size_t, std::size_t>> pool_levels() const {
        return pool_.levels();
    }

    // Applies the culling rules once; returns how many kernels it began to cull.
    std::size_t cull_once();
    // A kernel of `who` (any, for an admin) culled within the retention period: its id
    // answers 410 Gone. Others' culled ids stay unknown, as their live ones are.
    std::optional<culled_kernel> culled_for(const std::string& id, const user& who) const;
    // The most recently culled kernels, newest first: what an admin's overview shows.
    std::vector<std::pair<std::string, culled_kernel>> recently_culled(std::size_t limit) const {
        return culled_.latest(limit, clock_());
    }

private:
    // create(), with the sandbox of request.share_sandbox_of once read (null: its own).
    void create_with(create_kernel_request request,
                     std::shared_ptr<launcher::session_sandbox> sandbox,
                     std::function<void(create_kernel_result)> done);
    void start_culling();
    void schedule_cull();
    void shutdown_registered(std::function<void()> done);
    // The kernels a stop still waits for, for the log: "id (state), ...".
    std::string still_stopping() const;
    std::optional<kernel_outcome> over_limit(const user& who) const;
    // Called with mutex_ held: unregisters kept kernels until `who` is within the limits;
    // returns them for shutting down outside the lock.
    std::vector<std::shared_ptr<kernel_session>> make_room(const user& who);
    void forget_locked(const std::shared_ptr<kernel_session>& kernel);

    kernel_environment& env_;
    const launcher::kernelspec_catalog& catalog_;
    const culling_policy culling_;
    const std::size_t max_kernels_;
    const kernel_reuse reuse_;
    const clock_fn clock_;
    culled_kernels culled_;
    warm_pool pool_;
    boost::asio::steady_timer cull_timer_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<kernel_session>> kernels_;
    kernel_keep kept_;
    bool stopping_ = false;
};

}  // namespace callisto::gateway::kernels
