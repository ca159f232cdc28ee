#include "launcher/sandbox/session_workdir.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace callisto::launcher {

namespace {

[[noreturn]] void fail(const std::string& what, int err) {
    throw std::runtime_error("session workdir: " + what + ": " + std::strerror(err));
}

}  // namespace

session_workdir::session_workdir(const std::filesystem::path& root, const std::string& name,
                                 const sandbox_identity& owner, std::uint64_t quota_bytes) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        throw std::runtime_error("session workdir: invalid name \"" + name + "\"");
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    if (ec)
        throw std::runtime_error("session workdir: create " + root.string() + ": " + ec.message());
    // Traversable but not listable: a kernel (as its own uid) reaches only the path it knows,
    // and the sandbox does not even show it the root.
    if (::chmod(root.c_str(), 0711) != 0) fail("chmod " + root.string(), errno);

    const auto dir = root / name;
    if (::mkdir(dir.c_str(), 0700) != 0) fail("create " + dir.string(), errno);
    dir_ = dir;
    try {
        if (quota_bytes > 0) {
            const std::string options = "size=" + std::to_string(quota_bytes) +
                                        ",mode=0700,uid=" + std::to_string(owner.uid) +
                                        ",gid=" + std::to_string(owner.gid);
            if (::mount("callisto-work", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                        options.c_str()) != 0)
                fail("mount a " + std::to_string(quota_bytes) + "-byte tmpfs on " + dir.string(),
                     errno);
            mounted_ = true;
        }
        if (::chown(dir.c_str(), owner.uid, owner.gid) != 0) fail("chown " + dir.string(), errno);
        if (::chmod(dir.c_str(), 0700) != 0) fail("chmod " + dir.string(), errno);
    } catch (...) {
        if (mounted_) ::umount2(dir.c_str(), MNT_DETACH);
        ::rmdir(dir.c_str());
        throw;
    }
}

session_workdir::~session_workdir() {
    // MNT_DETACH: a kernel still holding a file open must not keep the session alive.
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

}  // namespace callisto::launcher
