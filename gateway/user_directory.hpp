#pragma once
// The users a request may authenticate as, replaceable while the server runs. With a users
// file, SIGHUP (or a change of the file, noticed within a poll interval) reads it again: the
// new users take effect at once and together, for every request after it; a file that does
// not parse leaves the users in effect as they were. Whose entry went or changed (its token,
// role or quota) is returned, so their open connections can be closed.

#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "gateway/token_auth.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway {

class user_directory {
public:
    // One token (or none): nothing to reload.
    explicit user_directory(token_auth fixed);
    // Reads the users file; throws std::runtime_error as token_auth::from_users_file does.
    explicit user_directory(std::filesystem::path users_file);

    bool enabled() const { return current()->enabled(); }
    std::optional<user> authenticate(std::string_view authorization, std::string_view query,
                                     std::string_view websocket_offer = {}) const {
        return current()->authenticate(authorization, query, websocket_offer);
    }

    bool has_file() const { return !file_.empty(); }
    const std::filesystem::path& file() const { return file_; }
    // Reads the users file again and puts it in effect. Returns the names of the users whose
    // entry went or changed; throws std::runtime_error (the old users stay) on a bad file,
    // which then counts as read: file_changed() is false until it changes again.
    std::set<std::string> reload();
    // Whether the file's size, modification time or inode differ from those last read.
    bool file_changed() const;

private:
    struct file_stamp {
        off_t size = -1;
        timespec mtime{};
        ino_t inode = 0;
        bool operator==(const file_stamp& o) const {
            return size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
                   mtime.tv_nsec == o.mtime.tv_nsec && inode == o.inode;
        }
    };
    static file_stamp stamp_of(const std::filesystem::path& file);
    std::shared_ptr<const token_auth> current() const;

    const std::filesystem::path file_;
    mutable std::mutex mutex_;
    std::shared_ptr<const token_auth> auth_;  // guarded by mutex_
    file_stamp loaded_;                       // guarded by mutex_
};

}  // namespace callisto::gateway
