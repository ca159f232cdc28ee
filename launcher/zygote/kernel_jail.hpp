#pragma once
// The sandbox a zygote's fork builds around itself, in place of bwrap's: the same namespaces,
// the same read-only root from a sandbox_layout, the same identity, limits and seccomp filter.
// Runs in the forked child as root, in two steps:
//
//   the jail's pid 1 (first process of a new pid namespace, made by the zygote):
//     join_cgroups -> enter_namespaces -> build_root -> apply_rlimits, then forks the kernel
//   the kernel (pid 2): become_unprivileged -> confine (no_new_privs + seccomp)
//
// Each step throws std::system_error naming what failed; the child reports it to the zygote.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "launcher/sandbox_layout.hpp"
#include "launcher/spawn_description.hpp"

namespace callisto::launcher::zygote {

// Writes "0" to each cgroup.procs file: the calling process joins the kernel's cgroups.
void join_cgroups(const std::vector<std::filesystem::path>& procs_files);

// New mount, network (loopback up), IPC, UTS (hostname "kernel") and cgroup namespaces. The
// pid namespace was made by the zygote before the fork.
void enter_namespaces();

// An empty tmpfs mounted on `scratch` (an empty directory) becomes the root: /usr and the etc
// files read-only, the runtime dir and the workdir read-write, a fresh /proc, a minimal /dev,
// capped /tmp and /dev/shm; then pivot_root, the old root detached, / and /dev read-only.
void build_root(const sandbox_layout& layout, const std::filesystem::path& scratch);

void apply_rlimits(const std::vector<resource_limit>& limits);

// Drops every capability from the bounding set (jailed only), then the supplementary groups,
// gid and uid. Dumpable again afterwards, as after an execve (only the jail's pid 1 stays
// undumpable).
void become_unprivileged(std::optional<uid_t> uid, std::optional<gid_t> gid, bool drop_bounding);

// no_new_privs, then the seccomp program (BPF as seccomp_filter::bpf() exports it).
void confine(const std::string& seccomp_bpf);

}  // namespace callisto::launcher::zygote
