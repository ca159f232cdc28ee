#include "launcher/sandbox/seccomp_filter.hpp"

#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <system_error>

#include <linux/netlink.h>

#include "launcher/process/memfd.hpp"

namespace callisto::launcher {

namespace {

class filter_context {
public:
    filter_context() : ctx_(::seccomp_init(SCMP_ACT_ALLOW)) {
        if (!ctx_) throw std::runtime_error("seccomp: seccomp_init failed");
    }
    ~filter_context() { ::seccomp_release(ctx_); }
    filter_context(const filter_context&) = delete;
    filter_context& operator=(const filter_context&) = delete;
    scmp_filter_ctx get() const { return ctx_; }

private:
    scmp_filter_ctx ctx_;
};

void check(int rc, const char* what) {
    if (rc < 0)
        throw std::runtime_error(std::string("seccomp: ") + what + ": " + std::strerror(-rc));
}

// Names resolved at run time, so a syscall this libseccomp or arch does not know is skipped
// rather than breaking the build.
void deny(scmp_filter_ctx ctx, const char* name, int error = EPERM) {
    const int nr = ::seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;
    check(::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(error), nr, 0), name);
}

constexpr const char* denied_syscalls[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "fanotify_init",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "vhangup",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "personality",
};

constexpr scmp_datum_t namespace_flags[] = {CLONE_NEWNS,     CLONE_NEWUTS, CLONE_NEWIPC,
                                            CLONE_NEWUSER,   CLONE_NEWPID, CLONE_NEWNET,
                                            CLONE_NEWCGROUP, 0x00000080 /* CLONE_NEWTIME */};

void add_rule(scmp_filter_ctx ctx, int error, int syscall, const char* what,
              std::initializer_list<scmp_arg_cmp> args) {
    check(::seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(error), syscall,
                                   static_cast<unsigned>(args.size()), args.begin()),
          what);
}

void add_rules(scmp_filter_ctx ctx) {
    for (const char* name : denied_syscalls) deny(ctx, name);
    deny(ctx, "clone3", ENOSYS);

    // clone(flags, ...): flags is argument 0 on x86_64 and arm64. One rule per flag, since a
    // rule's comparisons are ANDed and "any of these bits" has no single comparison.
    for (auto flag : namespace_flags)
        add_rule(ctx, EPERM, SCMP_SYS(clone), "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)});

    // socket(domain, type, protocol): allow AF_UNIX (1), AF_INET (2), AF_INET6 (10) and
    // AF_NETLINK (16) with protocol 0; the network namespace leaves only loopback for INET.
    constexpr int denied_below_netlink[] = {AF_UNSPEC, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15};
    for (int family : denied_below_netlink)
        add_rule(ctx, EAFNOSUPPORT, SCMP_SYS(socket), "socket family",
                 {SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(family))});
    add_rule(ctx, EAFNOSUPPORT, SCMP_SYS(socket), "socket family",
             {SCMP_A0(SCMP_CMP_GE, static_cast<scmp_datum_t>(AF_NETLINK + 1))});
    add_rule(ctx, EPERM, SCMP_SYS(socket), "netlink protocol",
             {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE)});
    // Raw IP sockets. The type carries SOCK_NONBLOCK / SOCK_CLOEXEC in its high bits; the kind
    // is the low nibble. Netlink sockets are SOCK_RAW by nature (libzmq's NETLINK_ROUTE too).
    for (scmp_datum_t family : {scmp_datum_t{AF_INET}, scmp_datum_t{AF_INET6}})
        for (scmp_datum_t kind : {scmp_datum_t{SOCK_RAW}, scmp_datum_t{SOCK_PACKET}})
            add_rule(ctx, EPERM, SCMP_SYS(socket), "raw socket",
                     {SCMP_A0(SCMP_CMP_EQ, family), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, kind)});
}

}  // namespace

seccomp_filter::seccomp_filter() {
    filter_context ctx;
    add_rules(ctx.get());
    // libseccomp only exports to a descriptor; go through a memfd and keep the bytes.
    const unique_fd fd(::memfd_create("callisto-seccomp-export", MFD_CLOEXEC));
    if (!fd) throw std::system_error(errno, std::generic_category(), "seccomp: memfd_create");
    check(::seccomp_export_bpf(ctx.get(), fd.get()), "seccomp_export_bpf");
    const off_t size = ::lseek(fd.get(), 0, SEEK_END);
    if (size <= 0) throw std::runtime_error("seccomp: exported an empty program");
    bpf_.resize(static_cast<std::size_t>(size));
    if (::pread(fd.get(), bpf_.data(), bpf_.size(), 0) != size)
        throw std::system_error(errno, std::generic_category(), "seccomp: reading the program");
}

unique_fd seccomp_filter::make_fd() const { return memfd_holding("callisto-seccomp", bpf_); }

}  // namespace callisto::launcher
