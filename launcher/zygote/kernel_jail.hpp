#pragma once
// The sandbox a zygote's kernel runs in, in place of bwrap's: the same namespaces, the same
// read-only root from a sandbox_layout, the same identity, limits and seccomp filter. Built as
// root by two processes of the kernel's new pid namespace (see fork_server.hpp):
//
//   the jail's pid 1 (callisto-jail-init, see jail_init.hpp):
//     join_cgroups -> enter_namespaces -> build_root -> apply_rlimits, then unprivileged
//   the kernel (forked from the zygote into that pid namespace, the child of pid 1):
//     join_cgroups -> join_namespaces_of(pid 1) -> apply_rlimits -> become_unprivileged
//     -> confine (no_new_privs + seccomp)
//
// Each step throws std::system_error naming what failed; the process reports it to the zygote.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "launcher/process/spawn_description.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"

namespace callisto::launcher::zygote {

// Writes "0" to each cgroup.procs file: the calling process joins the kernel's cgroups.
void join_cgroups(const std::vector<std::filesystem::path>& procs_files);

// New mount, network (loopback up), IPC, UTS (hostname "kernel") and cgroup namespaces. The
// pid namespace was made by the zygote before the fork.
void enter_namespaces();

// An empty tmpfs mounted on `scratch` (an empty directory) becomes the root: /usr and the etc
// files read-only, the runtime dir and the workdir read-write, a fresh /proc, a minimal /dev,
// capped /tmp and /dev/shm, the kernelspec's environment read-only; then pivot_root, the old
// root detached, / and /dev read-only.
void build_root(const sandbox_layout& layout, const std::filesystem::path& scratch);

// The IPC, UTS, network, cgroup and mount namespaces of `pid` (the jail's pid 1, by its pid
// in the caller's /proc), the mount namespace last: its root becomes the caller's root.
void join_namespaces_of(pid_t pid);

void apply_rlimits(const std::vector<resource_limit>& limits);

// Drops every capability from the bounding set (jailed only), then the supplementary groups,
// gid and uid. Dumpable again afterwards, as after an execve (only the jail's pid 1 stays
// undumpable).
void become_unprivileged(std::optional<uid_t> uid, std::optional<gid_t> gid, bool drop_bounding);

// no_new_privs, then the seccomp program (BPF as seccomp_filter::bpf() exports it).
void confine(const std::string& seccomp_bpf);

}  // namespace callisto::launcher::zygote
