#include "launcher/zygote/jail_init.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>
#include <system_error>
#include <variant>

#include "launcher/process/memfd.hpp"
#include "launcher/zygote/kernel_jail.hpp"
#include "launcher/zygote/pid_one.hpp"
#include "launcher/zygote/zygote_protocol.hpp"

namespace callisto::launcher::zygote {

namespace {

[[noreturn]] void report_and_exit(const std::string& why) {
    [[maybe_unused]] auto n = ::write(jail_init_fd::report, why.data(), why.size());
    ::_exit(127);
}

// The zygote died before PR_SET_PDEATHSIG took: no signal will come, so go now. The report
// pipe's read end was the zygote's alone.
void die_with_zygote() {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        throw std::system_error(errno, std::generic_category(), "PR_SET_PDEATHSIG");
    pollfd p{jail_init_fd::report, 0, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) ::_exit(127);
}

}  // namespace

void run_jail_init(const std::filesystem::path& scratch, long kernel) {
    // First of all: a blocked signal is queued even for a namespace's init, which would drop
    // every signal it has no handler for; run_pid_one takes them from the queue.
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, nullptr);
    ::prctl(PR_SET_NAME, "callisto-jail");  // not the truncated "callisto-jail-i"
    // The descriptors are the fixed numbers the zygote set (jail_init.hpp), owned by no object:
    // each is closed by hand once its part is done.
    try {
        auto order =
            zygote_protocol::decode_order(memfd_contents(jail_init_fd::order, "the order"));
        ::close(jail_init_fd::order);
        auto* fork = std::get_if<zygote_protocol::fork_order>(&order);
        if (!fork || !fork->layout) throw std::runtime_error("not a jailed fork order");
        if (kernel < 0)
            throw std::system_error(static_cast<int>(-kernel), std::generic_category(), "fork");
        if (!fork->outlive_gateway) die_with_zygote();
        join_cgroups(fork->cgroup_procs_files);
        enter_namespaces();
        build_root(*fork->layout, scratch);
        apply_rlimits(fork->rlimits);
        if (::write(jail_init_fd::ready, "1", 1) != 1)
            throw std::system_error(errno, std::generic_category(), "telling the kernel");
        ::close(jail_init_fd::ready);
        become_unprivileged(fork->uid, fork->gid, true);
        if (::prctl(PR_SET_DUMPABLE, 0) != 0 || ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
            throw std::system_error(errno, std::generic_category(), "prctl");
        if (!fork->outlive_gateway) die_with_zygote();  // a new uid cleared it
        ::close(jail_init_fd::report);
        run_pid_one(static_cast<pid_t>(kernel));
    } catch (const std::exception& e) {
        report_and_exit(e.what());
    }
}

}  // namespace callisto::launcher::zygote
