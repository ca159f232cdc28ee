#pragma once
// A gateway's claim on its --workdir-root for its whole life: an exclusive flock on
// <root>/.callisto.lock. The kernel drops the lock when the gateway dies, however it dies, so
// the next instance on the same root knows that whatever it finds there was left by a dead
// one (leftover_reaper), and a second live instance on the same root is refused.
//
// It keeps two notes in the root for the next instance: a tag that names this root's
// instance on the host (kernel cgroups carry it, so a reaper touches only its own), and where
// the runtime root was (by default /tmp/callisto-<pid>, a new path at every start).

#include <filesystem>
#include <optional>
#include <string>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

class instance_lock {
public:
    // Creates the root (0711) if needed and takes the lock. Throws std::runtime_error naming
    // the root when another live instance holds it, or when the root is unusable.
    explicit instance_lock(std::filesystem::path workdir_root);

    const std::filesystem::path& root() const { return root_; }

    // 8 hex digits, kept in the root: the same across restarts on this root.
    const std::string& tag() const { return tag_; }

    // The runtime root the previous instance on this root recorded, if any.
    const std::optional<std::filesystem::path>& previous_runtime_root() const {
        return previous_runtime_;
    }

    // Marks `runtime_root` (already created) as this instance's and records it for the next
    // one, which removes it only while the mark is still there.
    void claim_runtime_root(const std::filesystem::path& runtime_root) const;

    // Whether `name` (an entry of the workdir root) is one of the lock's own files.
    static bool is_own_file(const std::string& name);

    // Whether `runtime_root` carries the mark of the instance tagged `tag`.
    static bool runtime_root_marked(const std::filesystem::path& runtime_root,
                                    const std::string& tag);

private:
    std::filesystem::path root_;
    unique_fd fd_;
    std::string tag_;
    std::optional<std::filesystem::path> previous_runtime_;
};

}  // namespace callisto::launcher
