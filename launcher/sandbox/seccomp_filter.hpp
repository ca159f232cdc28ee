#pragma once
// The seccomp filter every sandboxed kernel runs under, compiled once to BPF with libseccomp
// and handed to bwrap (--seccomp FD) for each spawn. A second wall behind the namespaces:
// it denies what an unprivileged process in its own user namespace could still try.
//
// Denied with EPERM: ptrace and cross-process memory access; mount, pivot_root and the new
// mount API; unshare, setns, and clone with any namespace flag (clone3 answers ENOSYS so libc
// falls back to clone, whose flags a filter can inspect); kernel keyrings, bpf,
// perf_event_open, userfaultfd, kexec, module loading, reboot, swap, acct, quotactl, syslog,
// open_by_handle_at; sockets other than AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK protocol 0
// (libzmq asserts without NETLINK_ROUTE), and raw or packet sockets in any family. Other
// architectures' system calls kill the process (libseccomp's default).

#include <string>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

class seccomp_filter {
public:
    // Compiles the filter. Throws std::runtime_error if libseccomp fails.
    seccomp_filter();

    // A fresh memfd holding the BPF program, positioned at 0, without CLOEXEC cleared (the
    // spawn clears it in the child). bwrap reads it to the end, so each spawn needs its own.
    // Throws std::system_error.
    unique_fd make_fd() const;

    const std::string& bpf() const { return bpf_; }

private:
    std::string bpf_;
};

}  // namespace callisto::launcher
