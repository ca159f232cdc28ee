#include "gateway/user_directory.hpp"

#include <utility>

namespace callisto::gateway {

user_directory::user_directory(token_auth fixed)
    : auth_(std::make_shared<const token_auth>(std::move(fixed))) {}

user_directory::user_directory(std::filesystem::path users_file)
    : file_(std::move(users_file)), loaded_(stamp_of(file_)) {
    auth_ = std::make_shared<const token_auth>(token_auth::from_users_file(file_));
}

std::shared_ptr<const token_auth> user_directory::current() const {
    std::lock_guard lock(mutex_);
    return auth_;
}

user_directory::file_stamp user_directory::stamp_of(const std::filesystem::path& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return {};
    return {st.st_size, st.st_mtim, st.st_ino};
}

bool user_directory::file_changed() const {
    if (file_.empty()) return false;
    const auto now = stamp_of(file_);
    std::lock_guard lock(mutex_);
    return !(now == loaded_);
}

std::set<std::string> user_directory::reload() {
    if (file_.empty()) return {};
    // Stamped before the read: a change during the read is seen by the next poll.
    const auto stamp = stamp_of(file_);
    std::shared_ptr<const token_auth> next;
    try {
        next = std::make_shared<const token_auth>(token_auth::from_users_file(file_));
    } catch (...) {
        // Said once: the watch tries again only when the file changes again.
        std::lock_guard lock(mutex_);
        loaded_ = stamp;
        throw;
    }
    std::lock_guard lock(mutex_);
    auto changed = auth_->users_changed_in(*next);
    auth_ = std::move(next);
    loaded_ = stamp;
    return changed;
}

}  // namespace callisto::gateway
