#pragma once
// What tells one process from another that later got the same pid: its start time, in clock
// ticks since boot (/proc/<pid>/stat, field 22), never the same for two processes with one pid.
// A gateway records it with each kernel, and the next one adopts a pid only while it matches.

#include <sys/types.h>
#include <cstdint>
#include <optional>

namespace callisto::launcher {

// nullopt when there is no such process (or it is a zombie: it runs nothing).
std::optional<std::uint64_t> process_start_ticks(pid_t pid);

// The real uid (/proc/<pid>/status); nullopt when there is no such process.
std::optional<uid_t> process_real_uid(pid_t pid);

}  // namespace callisto::launcher
