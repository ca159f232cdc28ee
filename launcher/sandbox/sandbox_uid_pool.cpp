#include "launcher/sandbox/sandbox_uid_pool.hpp"

#include <stdexcept>

namespace callisto::launcher {

sandbox_uid_pool::sandbox_uid_pool(uid_t first, std::uint32_t count)
    : first_(first), count_(count) {
    if (first == 0 || count == 0 || std::uint64_t{first} + count > (1ull << 31))
        throw std::invalid_argument("sandbox uid range must be non-empty, above 0 and below 2^31");
}

std::optional<sandbox_identity> sandbox_uid_pool::acquire() {
    std::lock_guard lock(mutex_);
    for (std::uint32_t i = 0; i < count_; ++i) {
        const uid_t uid = first_ + (next_ + i) % count_;
        if (taken_.insert(uid).second) {
            next_ = (next_ + i + 1) % count_;
            return sandbox_identity{uid, static_cast<gid_t>(uid)};
        }
    }
    return std::nullopt;
}

std::optional<sandbox_identity> sandbox_uid_pool::acquire(uid_t uid) {
    std::lock_guard lock(mutex_);
    if (uid < first_ || uid - first_ >= count_) return std::nullopt;
    if (!reserved_.erase(uid) && !taken_.insert(uid).second) return std::nullopt;
    return sandbox_identity{uid, static_cast<gid_t>(uid)};
}

bool sandbox_uid_pool::reserve(uid_t uid) {
    std::lock_guard lock(mutex_);
    if (uid < first_ || uid - first_ >= count_ || !taken_.insert(uid).second) return false;
    reserved_.insert(uid);
    return true;
}

void sandbox_uid_pool::cancel_reservation(uid_t uid) {
    std::lock_guard lock(mutex_);
    if (reserved_.erase(uid)) taken_.erase(uid);
}

void sandbox_uid_pool::release(const sandbox_identity& who) {
    std::lock_guard lock(mutex_);
    taken_.erase(who.uid);
}

std::size_t sandbox_uid_pool::in_use() const {
    std::lock_guard lock(mutex_);
    return taken_.size();
}

}  // namespace callisto::launcher
