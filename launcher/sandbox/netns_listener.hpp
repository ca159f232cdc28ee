#pragma once
// A TCP listener inside a kernel's network namespace, for the egress proxy (issue 36;
// docs/security.md, "Egress by allowlist"). The kernel's namespace holds only `lo`: a
// listener on its 127.0.0.1 is the one way out, and the gateway accepts on it from outside.

#include <sys/types.h>

#include <cstdint>
#include <system_error>
#include <variant>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

// Listens on 127.0.0.1:`port` (0: any free port) in the network namespace `namespace_fd`
// refers to: an open `/proc/PID/ns/net` or a pidfd. A thread of its own enters the namespace
// (setns changes the calling thread's only; the socket stays in the namespace it was made in)
// and ends, so no other thread ever runs there. The descriptor is non-blocking, close-on-exec,
// and SO_REUSEADDR: an earlier listener's closed connections on the port do not hold it.
// Needs CAP_SYS_ADMIN over the namespace's owner (the gateway is root).
std::variant<unique_fd, std::error_code> listen_in_namespace(int namespace_fd, std::uint16_t port,
                                                             int backlog = 16);

// The network namespace of a kernel's jail, opened: that of `pid` (a zygote's fork, which
// unshares its own) or of its first descendant in another namespace than the gateway's (bwrap
// stays in the host's and clones the jail). Called once the kernel's sockets exist, so the
// jail is built and nothing of the kernel's code has run yet. ENOENT when none is found.
std::variant<unique_fd, std::error_code> open_jail_network(pid_t pid);

}  // namespace callisto::launcher
