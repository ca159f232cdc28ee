#pragma once
// Hands out one unprivileged uid/gid per session from a configured range, so no two live
// sessions share an identity: files, signals, RLIMIT_NPROC and the ipc socket ownership check
// all separate sessions by uid. Never uid 0. Thread-safe.

#include <sys/types.h>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>

namespace callisto::launcher {

struct sandbox_identity {
    uid_t uid;
    gid_t gid;  // equal to uid: a private group per session
};

class sandbox_uid_pool {
public:
    // [first, first + count). Throws std::invalid_argument for a range touching uid 0 or
    // beyond 2^31.
    sandbox_uid_pool(uid_t first, std::uint32_t count);

    // nullopt when every uid is taken.
    std::optional<sandbox_identity> acquire();
    // Takes this uid (a kernel adopted after a restart keeps its own); nullopt when it is
    // outside the range or taken by someone else. A reserved uid is taken by this call.
    std::optional<sandbox_identity> acquire(uid_t uid);
    // Holds a uid for a later acquire(uid) (adoptions are decided before the kernels they
    // concern start, while other kernels already may): false when outside the range or taken.
    bool reserve(uid_t uid);
    // Frees a reservation never acquired; a uid acquired since stays taken.
    void cancel_reservation(uid_t uid);
    void release(const sandbox_identity& who);

    std::size_t in_use() const;

private:
    const uid_t first_;
    const std::uint32_t count_;
    std::uint32_t next_ = 0;  // round robin, so a uid is not reused right after release
    mutable std::mutex mutex_;
    std::set<uid_t> taken_;
    std::set<uid_t> reserved_;  // taken, for one acquire(uid)
};

}  // namespace callisto::launcher
