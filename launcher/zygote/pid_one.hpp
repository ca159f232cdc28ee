#pragma once
// The jail's pid 1, as bwrap's own init: the kernel is its only child it cares for. It reaps
// every orphan the kernel's code leaves (they are reparented to it), forwards the signals the
// gateway sends the jail (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) to the kernel,
// and exits as the kernel did: its exit code, or 128+N when killed by signal N. When it
// exits, the pid namespace goes, and every process left in it is killed.

#include <sys/types.h>

namespace callisto::launcher::zygote {

// Every signal must already be blocked (before the kernel was forked, so none is lost).
[[noreturn]] void run_pid_one(pid_t kernel);

}  // namespace callisto::launcher::zygote
