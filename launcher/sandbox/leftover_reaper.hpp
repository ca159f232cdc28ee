#pragma once
// Reaps what a previous gateway on the same --workdir-root left behind when it died without
// cleaning up (SIGKILL, a crash): kernels still running, the session workdirs' tmpfs mounts
// and directories, the kernels' cgroups, and its runtime root (connection files, ipc sockets).
//
// Run it only while holding the root's instance_lock: then no live instance uses anything
// under the root. Another instance on the host (its own root, perhaps even the same uids) is
// never touched, because each thing is recognised as this root's by more than its location:
// - a process: it is in one of this root's cgroups; or its real uid is in this instance's
//   sandbox range AND either its mount namespace (not the host's) has one of this root's
//   session workdirs mounted (a sandbox's /work: the tmpfs is known by its device, which
//   nothing in a sandbox can mount or fake), or one of its arguments is a path under the
//   workdir root or the previous runtime root (a process started by hand on those paths).
//   Command lines name no host path since kernels stopped showing them (their /proc/1/cmdline),
//   so the mounts are what finds a sandbox where there are no cgroups. Killing a sandbox's
//   pid 1 ends its whole pid namespace. Each is checked and killed through a pidfd, so a
//   recycled pid is never hit.
// - a cgroup: <hierarchy>/<layout.parent>/<tag>-*, the tag being this root's.
// - a workdir: an entry named like a kernel id (a lower-case UUID) that is a "callisto-work"
//   tmpfs mount point, or a directory owned by a uid of the range, or an empty directory.
//   Anything else is left alone and reported.
// - the runtime root: only while it carries this root's mark (instance_lock).

#include <sys/types.h>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/sandbox/cgroup_layout.hpp"

namespace callisto::launcher {

struct leftover_scope {
    std::filesystem::path workdir_root;  // absolute, locked by this instance
    uid_t uid_first = 0;                 // the sandbox uid range [uid_first, uid_first + uid_count)
    std::uint32_t uid_count = 0;
    cgroup_layout cgroups;
    std::string tag;                                    // this root's cgroup name prefix
    std::optional<std::filesystem::path> runtime_root;  // the previous instance's, if recorded
    // What this instance adopted from the previous one (kernels that outlived it, --state-dir)
    // and must not be reaped: their sandbox uids, cgroup names and workdir names. Their
    // runtime directories were moved out of the previous runtime root before.
    std::set<uid_t> adopted_uids;
    std::set<std::string> adopted_cgroups;
    std::set<std::string> adopted_workdirs;
};

struct reap_report {
    std::size_t processes = 0;                          // killed
    std::size_t mounts = 0;                             // unmounted (lazily)
    std::size_t workdirs = 0;                           // removed
    std::size_t cgroups = 0;                            // removed
    std::optional<std::filesystem::path> runtime_root;  // removed
    std::vector<std::string> problems;                  // what was left, and why

    bool nothing_reaped() const;
    // "2 processes killed, 1 tmpfs unmounted, 1 workdir, 3 cgroups and runtime root X removed"
    std::string describe() const;
};

struct mount_entry {
    std::filesystem::path mount_point;
    std::string fstype;
    std::string source;
    std::string device;  // "major:minor", as mountinfo gives it
};

class leftover_reaper {
public:
    explicit leftover_reaper(leftover_scope scope);

    // Kills, waits for the kills, removes cgroups, unmounts, removes directories. Never throws
    // for what it finds; what it cannot reap is in the report's problems.
    reap_report reap() const;

    // The pieces that need no root, for tests.

    // The mounts of a /proc/<pid>/mountinfo text whose mount point is strictly below `root`,
    // deepest first (octal escapes such as \040 decoded).
    static std::vector<mount_entry> mounts_below(std::string_view mountinfo,
                                                 const std::filesystem::path& root);
    // Whether a process with real uid `uid` and arguments `argv` is one of scope's kernels.
    static bool is_leftover_process(const leftover_scope& scope, uid_t uid,
                                    const std::vector<std::string>& argv);
    // Whether a /proc/<pid>/mountinfo text has a mount of one of `devices` ("major:minor"):
    // the process's mount namespace holds one of those filesystems.
    static bool mounts_any_of(std::string_view mountinfo, const std::set<std::string>& devices);
    // Whether `name` has the form of a kernel id, as session workdirs are named.
    static bool is_kernel_id(std::string_view name);
    // The cgroup directories of scope's tag in each of its hierarchies.
    static std::vector<std::filesystem::path> tagged_cgroups(const leftover_scope& scope);

private:
    // A mount of a session workdir of this root that is not adopted: <root>/<kernel id>, a
    // "callisto-work" tmpfs (session_workdir).
    bool is_session_workdir(const mount_entry& m) const;

    leftover_scope scope_;
};

}  // namespace callisto::launcher
