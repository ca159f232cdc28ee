#pragma once
// A session's working directory: <root>/<name>, owned by the session's uid, outliving kernel
// restarts, removed with the session.
//
// Its total size is capped by making it a size-limited tmpfs mounted on the host (needs
// CAP_SYS_ADMIN, which the privileged gateway has): writes beyond the quota fail with ENOSPC
// inside the kernel, a hard limit no polling can race. The cost: the files live in RAM (and
// count against the kernel's memory cgroup when it writes them), and they are gone with the
// session, which is the lifetime a kernel gateway's scratch space has anyway.

#include <cstdint>
#include <filesystem>
#include <string>

#include "launcher/process/adopt_existing.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"

namespace callisto::launcher {

class session_workdir {
public:
    // quota_bytes == 0: a plain directory, no size cap (for --sandbox=off).
    // Throws std::runtime_error saying what failed.
    session_workdir(const std::filesystem::path& root, const std::string& name,
                    const sandbox_identity& owner, std::uint64_t quota_bytes);
    // Takes over the workdir of a kernel an earlier gateway started; `mounted`: its tmpfs.
    session_workdir(adopt_existing_t, std::filesystem::path dir, bool mounted)
        : dir_(std::move(dir)), mounted_(mounted) {}
    ~session_workdir();  // unmounts and removes everything
    session_workdir(const session_workdir&) = delete;
    session_workdir& operator=(const session_workdir&) = delete;

    const std::filesystem::path& path() const { return dir_; }
    bool size_capped() const { return mounted_; }

private:
    std::filesystem::path dir_;
    bool mounted_ = false;
};

}  // namespace callisto::launcher
