#pragma once
// The jail's pid 1 for a kernel forked by a zygote. The zygote vforks it as the first
// process of the kernel's new pid namespace; sharing the zygote's memory, it forks the kernel
// (pid 2, its child), then execs `callisto-jail-init --scratch=DIR --kernel=PID` (beside the
// zygote's binary), so the zygote's 100 MB are copied once per kernel, not twice, and pid 1
// holds none of them. Here it builds the jail (kernel_jail.hpp), tells the kernel to join it,
// and is the kernel's init (pid_one.hpp).
//
// Its descriptors, set by the zygote:
//   0 /dev/null, 1 and 2 the kernel's output
//   jail_init_fd::order   the fork order, as the gateway sent it (a memfd)
//   jail_init_fd::report  the report pipe: why the start failed, if it did
//   jail_init_fd::ready   to the kernel: "1" once the jail is built; EOF alone means it failed
// --kernel is the kernel's pid, or -errno when its fork failed.

#include <filesystem>

namespace callisto::launcher::zygote {

namespace jail_init_fd {
inline constexpr int order = 3;
inline constexpr int report = 4;
inline constexpr int ready = 5;
}  // namespace jail_init_fd

inline constexpr const char* jail_init_program = "callisto-jail-init";

// Never returns: exits as the kernel did, or with 127 after reporting why the jail failed.
[[noreturn]] void run_jail_init(const std::filesystem::path& scratch, long kernel);

}  // namespace callisto::launcher::zygote
