#include "launcher/process/child_launch.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "common/unique_fd.hpp"

namespace callisto::launcher {
namespace {

constexpr const char* default_path = "/usr/local/bin:/usr/bin:/bin";

// What a child writes to the CLOEXEC pipe when it fails before or at execve.
enum class child_stage : int {
    setpgid,
    pdeathsig,
    stdin_redirect,
    output_redirect,
    chdir,
    exec,
    cgroup,
    rlimit,
    setgroups,
    setgid,
    setuid,
    inherit_fd
};
struct child_error {
    child_stage stage;
    int error;
};

const char* stage_text(child_stage stage) {
    switch (stage) {
        case child_stage::setpgid: return "setpgid";
        case child_stage::pdeathsig: return "prctl(PR_SET_PDEATHSIG)";
        case child_stage::stdin_redirect: return "redirecting stdin";
        case child_stage::output_redirect: return "redirecting stdout and stderr";
        case child_stage::chdir: return "chdir";
        case child_stage::exec: return "execve";
        case child_stage::cgroup: return "joining the cgroup";
        case child_stage::rlimit: return "setrlimit";
        case child_stage::setgroups: return "setgroups";
        case child_stage::setgid: return "setresgid";
        case child_stage::setuid: return "setresuid";
        case child_stage::inherit_fd: return "keeping an inherited descriptor";
    }
    return "?";
}

// Resolved before fork: after fork only async-signal-safe calls are allowed, and execvpe would
// search the gateway's PATH rather than the child's.
std::string resolve_executable(const spawn_description& what) {
    const auto& name = what.argv.front();
    if (name.find('/') != std::string::npos) return name;
    auto it = what.env.find("PATH");
    const std::string search = it != what.env.end() ? it->second : default_path;
    std::size_t start = 0;
    while (start <= search.size()) {
        auto end = search.find(':', start);
        if (end == std::string::npos) end = search.size();
        const auto dir = search.substr(start, end - start);
        start = end + 1;
        if (dir.empty() || dir.front() != '/') continue;  // relative entries depend on a cwd
        const auto candidate = dir + "/" + name;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    throw std::system_error(ENOENT, std::generic_category(),
                            "cannot start " + name + ": not found on PATH " + search);
}

// What the child applies before execve, prepared before fork so the child only reads it.
struct child_setup {
    std::vector<const char*> cgroup_files;
    const std::vector<resource_limit>* rlimits = nullptr;
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    std::vector<int> keep_fds;  // sorted, unique: inherited fds plus the error pipe
    const std::vector<int>* inherit_fds = nullptr;
    int output_fd = -1;
    bool die_with_parent = true;
};

// Runs in the forked child: async-signal-safe calls only, no allocation, no locks.
[[noreturn]] void exec_child(const char* path, char* const* argv, char* const* envp,
                             const char* cwd, int devnull, int error_fd, pid_t parent,
                             const child_setup& setup) {
    auto fail = [error_fd](child_stage stage) {
        child_error report{stage, errno};
        [[maybe_unused]] auto n = ::write(error_fd, &report, sizeof report);
        ::_exit(127);
    };

    // Own process group: signals to the kernel reach everything it started, and a terminal's
    // Ctrl-C aimed at the gateway does not reach the kernel.
    if (::setpgid(0, 0) != 0) fail(child_stage::setpgid);
    if (setup.die_with_parent) {
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(child_stage::pdeathsig);
        // The gateway may have died between fork and prctl; then no signal will ever come.
        if (::getppid() != parent) ::_exit(127);
    }

    // Ignored signals and the blocked mask survive execve; the kernel must start clean.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);

    if (::dup2(devnull, STDIN_FILENO) < 0) fail(child_stage::stdin_redirect);
    if (setup.output_fd >= 0 &&
        (::dup2(setup.output_fd, STDOUT_FILENO) < 0 || ::dup2(setup.output_fd, STDERR_FILENO) < 0))
        fail(child_stage::output_redirect);

    // Join the cgroup while still root, and before anything the limits should count.
    for (const char* file : setup.cgroup_files) {
        const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
        if (fd < 0) fail(child_stage::cgroup);
        if (::write(fd, "0", 1) != 1) fail(child_stage::cgroup);  // "0": the writing process
        ::close(fd);  // raw, as all between fork and exec: no destructor, no hidden code
    }
    for (const auto& limit : *setup.rlimits) {
        const struct rlimit value { limit.soft, limit.hard };
        if (::setrlimit(static_cast<__rlimit_resource>(limit.resource), &value) != 0)
            fail(child_stage::rlimit);
    }
    // Groups first: after setresuid we could no longer change them.
    if (setup.uid || setup.gid) {
        if (::setgroups(0, nullptr) != 0) fail(child_stage::setgroups);
        if (setup.gid && ::setresgid(*setup.gid, *setup.gid, *setup.gid) != 0)
            fail(child_stage::setgid);
        if (setup.uid && ::setresuid(*setup.uid, *setup.uid, *setup.uid) != 0)
            fail(child_stage::setuid);
        // A new effective uid or gid clears the parent-death signal (prctl(2)): without this a
        // sandboxed kernel outlived a gateway that died before bwrap's --die-with-parent ran.
        if (setup.die_with_parent) {
            if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(child_stage::pdeathsig);
            if (::getppid() != parent) ::_exit(127);
        }
    }
    if (cwd && ::chdir(cwd) != 0) fail(child_stage::chdir);

    for (int fd : *setup.inherit_fds)
        if (::fcntl(fd, F_SETFD, 0) != 0) fail(child_stage::inherit_fd);
    // Nothing of the gateway's (client sockets, ZMQ sockets, files) leaks into user code.
    unsigned next = 3;
    for (int keep : setup.keep_fds) {
        if (keep < 3) continue;
        if (static_cast<unsigned>(keep) > next)
            ::close_range(next, static_cast<unsigned>(keep) - 1, 0);
        next = static_cast<unsigned>(keep) + 1;
    }
    ::close_range(next, ~0U, 0);

    ::execve(path, argv, envp);
    fail(child_stage::exec);
    ::_exit(127);  // not reached
}

}  // namespace

launched fork_exec(const spawn_description& what) {
    if (what.argv.empty()) throw std::invalid_argument("spawn: argv is empty");
    const auto& name = what.argv.front();

    // Everything the child touches is built here, before fork.
    const std::string path = resolve_executable(what);
    std::vector<char*> argv;
    argv.reserve(what.argv.size() + 1);
    for (const auto& arg : what.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    env_strings.reserve(what.env.size());
    for (const auto& [key, value] : what.env) env_strings.push_back(key + "=" + value);
    std::vector<char*> envp;
    envp.reserve(env_strings.size() + 1);
    for (auto& entry : env_strings) envp.push_back(entry.data());
    envp.push_back(nullptr);
    const std::string cwd = what.cwd.string();

    child_setup setup;
    for (const auto& file : what.cgroup_procs_files) setup.cgroup_files.push_back(file.c_str());
    setup.rlimits = &what.rlimits;
    setup.uid = what.uid;
    setup.gid = what.gid;
    setup.inherit_fds = &what.inherit_fds;
    setup.output_fd = what.output_fd;
    setup.die_with_parent = !what.outlive_gateway;
    for (int fd : what.inherit_fds) {
        if (fd < 3 || ::fcntl(fd, F_GETFD) < 0)
            throw std::invalid_argument("cannot start " + name + ": inherited fd " +
                                        std::to_string(fd) + " is not an open descriptor above 2");
        setup.keep_fds.push_back(fd);
    }

    unique_fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (devnull.get() < 0)
        throw std::system_error(errno, std::generic_category(),
                                "cannot start " + name + ": /dev/null");
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "cannot start " + name + ": pipe");
    unique_fd read_end(pipe_fds[0]);
    unique_fd write_end(pipe_fds[1]);
    setup.keep_fds.push_back(write_end.get());
    std::sort(setup.keep_fds.begin(), setup.keep_fds.end());
    setup.keep_fds.erase(std::unique(setup.keep_fds.begin(), setup.keep_fds.end()),
                         setup.keep_fds.end());

    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::system_error(errno, std::generic_category(), "cannot start " + name + ": fork");
    if (pid == 0)
        exec_child(path.c_str(), argv.data(), envp.data(), cwd.empty() ? nullptr : cwd.c_str(),
                   devnull.get(), write_end.get(), parent, setup);

    // The pipe reads EOF when execve succeeded (CLOEXEC) or the child died before reporting.
    write_end.reset();
    child_error report{};
    ssize_t n;
    do {
        n = ::read(read_end.get(), &report, sizeof report);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        const int err = n == static_cast<ssize_t>(sizeof report) ? report.error : EIO;
        std::string what_failed = stage_text(report.stage);
        if (report.stage == child_stage::exec) what_failed += " " + path;
        if (report.stage == child_stage::chdir) what_failed += " " + cwd;
        throw std::system_error(err, std::generic_category(),
                                "cannot start " + name + ": " + what_failed);
    }

    return {pid, path};
}

}  // namespace callisto::launcher
