#pragma once
// A zygote's loop: reads the gateway's orders from its socket, forks a kernel for each fork
// order (through a jail when the order has a layout), reports each fork's pid or the reason it
// failed, signals and terminates its kernels on request, reaps them and reports their exits.
// When the gateway closes the socket, every kernel it forked is killed and the loop ends.
//
// A fork's setup (cgroups, namespaces, the jail's root) runs in the child while the loop goes
// on: the next order is forked meanwhile, and the fork is reported when its setup ends.

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "launcher/zygote/jail_init.hpp"
#include "launcher/zygote/page_prefault.hpp"
#include "launcher/zygote/python_runtime.hpp"
#include "launcher/zygote/zygote_protocol.hpp"

namespace callisto::launcher::zygote {

class fork_server {
public:
    // `scratch` is an empty directory each jail mounts its root on (in its own mount
    // namespace); `seccomp_bpf` is the kernels' filter; `jail_init` is callisto-jail-init,
    // each jail's pid 1; `start_writes` the pages each ipykernel fork faults in first, once in
    // its cgroups (so that they are charged to the kernel's memory cgroup: a charge stays where
    // it was made) and while pid 1 builds the jail; `own_arguments` the zygote's argc and argv,
    // which each jailed kernel blanks in its copy (its /proc/self/cmdline). SIGCHLD must be
    // blocked.
    fork_server(int control_fd, python_runtime& python, std::filesystem::path scratch,
                std::string seccomp_bpf, std::filesystem::path jail_init,
                page_prefault start_writes, std::span<char*> own_arguments);

    // Returns once the gateway has gone.
    void run();

private:
    using clock = std::chrono::steady_clock;

    // A fork on its way to the kernel's first line of Python. Its report pipe brings the
    // stage that failed, or EOF once Python runs.
    struct starting_kernel {
        std::uint64_t order_id = 0;
        pid_t pid = 0;
        unique_fd report;
        clock::time_point deadline;
        bool outlive_gateway = false;
        std::string why;                 // the failure reported so far
        std::optional<int> wait_status;  // reaped before its report ended
    };

    // What a jailed kernel needs of its jail: the pipe on which pid 1, its parent, says the
    // jail is built.
    struct jailed_kernel {
        int ready = -1;
    };
    // What the jail's pid 1 gets as its descriptors 0 to 5 (jail_init.hpp).
    using jail_descriptors = std::array<int, jail_init_fd::ready + 1>;

    void on_message(const std::string& bytes, std::vector<unique_fd> fds);
    // `environment` is the memfd holding the kernel's environment: never read here.
    void fork_kernel(const zygote_protocol::fork_order& order, const std::string& order_bytes,
                     unique_fd environment, unique_fd output);
    // Makes a new pid namespace, its pid 1 and the kernel (pid 2) in it; returns pid 1's pid,
    // which stands for the kernel from then on. Throws what failed.
    pid_t fork_jailed(const zygote_protocol::fork_order& order, const std::string& order_bytes,
                      int environment, int output, int report);
    // The vfork: returns pid 1's pid, or -1 with errno.
    pid_t spawn_jail(const zygote_protocol::fork_order& order, int environment, int output,
                     int report, int ready, const jail_descriptors& sources, char* const* argv,
                     char* kernel_digits);
    void fault_in_start_writes(const zygote_protocol::fork_order& order) const;
    [[noreturn]] void kernel_child(const zygote_protocol::fork_order& order, int environment,
                                   int output, int report, std::optional<jailed_kernel> jail);
    // Reads what the fork reported; true once its report has ended (and the fork was reported).
    bool read_report(starting_kernel& start);
    void report_start(starting_kernel& start);
    void reap();
    void kill_due();
    void send(const std::string& bytes);

    int control_;
    python_runtime& python_;
    std::filesystem::path scratch_;
    std::string seccomp_bpf_;
    std::filesystem::path jail_init_;
    page_prefault start_writes_;
    std::span<char*> own_arguments_;
    unique_fd own_pid_namespace_;
    unique_fd child_signals_;  // signalfd for SIGCHLD
    // Forked and not yet reaped, with the time of the SIGKILL a terminate order set.
    std::map<pid_t, std::optional<clock::time_point>> kernels_;
    std::set<pid_t> outliving_;  // kernels_ forked to outlive the gateway
    std::vector<starting_kernel> starting_;
};

}  // namespace callisto::launcher::zygote
