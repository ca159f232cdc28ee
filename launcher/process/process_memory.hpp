#pragma once
// What a kernel costs the host in memory: the proportional set size (PSS) of its process and
// every descendant, from /proc/PID/smaps_rollup. PSS divides each shared page among the
// processes sharing it, so kernels forked from one zygote are charged their share of its
// preloaded pages, not all of them each.

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace callisto::launcher {

// nullopt when `root` is gone or its memory cannot be read.
std::optional<std::uint64_t> process_tree_pss(pid_t root);

}  // namespace callisto::launcher
