#include "launcher/sandbox/sandbox_probe.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

#include "launcher/process/brief_command.hpp"

namespace callisto::launcher {

namespace {

std::string first_line(const char* file) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return line;
}

// Runs `argv` as uid:uid with no groups; returns the exit status (128+N for signal N) and what
// it wrote.
std::pair<int, std::string> run_as(uid_t uid, const std::vector<std::string>& argv) {
    spawn_description what;
    what.argv = argv;
    what.env = {{"PATH", "/usr/bin:/bin"}};
    what.cwd = "/";
    what.uid = uid;
    what.gid = uid;
    try {
        const auto result = run_brief_command(what, std::chrono::seconds(30));
        if (result.timed_out) return {-1, "it did not finish within 30 s"};
        return {result.signal != 0 ? 128 + result.signal : result.exit_code, result.output};
    } catch (const std::exception& e) {
        return {-1, e.what()};
    }
}

}  // namespace

sandbox_probe sandbox_probe::run(const std::filesystem::path& bwrap, uid_t test_uid) {
    sandbox_probe p;
    p.bwrap = bwrap;
    p.cgroups = cgroup_layout::detect();
    p.privileged = ::geteuid() == 0;

    struct stat st {};
    if (::stat(bwrap.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        ::access(bwrap.c_str(), X_OK) != 0) {
        p.failure = bwrap.string() + " not found: install bubblewrap (apt-get install bubblewrap)";
        return p;
    }
    if (auto problem = privilege_problem(::geteuid()); !problem.empty()) {
        p.failure = std::move(problem);
        return p;
    }
    const auto [rc, output] = run_as(test_uid, {bwrap.string(),
                                                "--unshare-user",
                                                "--unshare-pid",
                                                "--unshare-net",
                                                "--unshare-ipc",
                                                "--disable-userns",
                                                "--die-with-parent",
                                                "--tmpfs",
                                                "/",
                                                "--ro-bind",
                                                "/usr",
                                                "/usr",
                                                "--symlink",
                                                "usr/bin",
                                                "/bin",
                                                "--symlink",
                                                "usr/lib",
                                                "/lib",
                                                "--symlink",
                                                "usr/lib64",
                                                "/lib64",
                                                "--proc",
                                                "/proc",
                                                "--size",
                                                "1048576",
                                                "--tmpfs",
                                                "/tmp",
                                                "--remount-ro",
                                                "/",
                                                "/usr/bin/true"});
    p.user_namespaces = rc == 0;
    if (!p.user_namespaces) {
        std::string why = output.empty() ? "exit status " + std::to_string(rc) : output;
        while (!why.empty() && why.back() == '\n') why.pop_back();
        p.failure = "bwrap cannot create an unprivileged user namespace here (" + why + ")";
        const auto max = first_line("/proc/sys/user/max_user_namespaces");
        if (max == "0") p.failure += "; user.max_user_namespaces is 0: set it above 0";
        const auto clone = first_line("/proc/sys/kernel/unprivileged_userns_clone");
        if (clone == "0") p.failure += "; kernel.unprivileged_userns_clone is 0: set it to 1";
    }
    return p;
}

std::string sandbox_probe::privilege_problem(uid_t euid) {
    if (euid == 0) return {};
    // Without root there is no per-session uid: every kernel would share the gateway's uid
    // and could reach the gateway's files and sockets outside its namespaces.
    return "the sandbox needs root: it gives each kernel its own uid, cgroup and disk quota "
           "(kernel code itself never runs as root); this process runs as uid " +
           std::to_string(euid) + ": start callisto as root";
}

std::string sandbox_probe::unreachable_by_sandbox(const std::filesystem::path& dir,
                                                  const std::string& what) {
    const auto absolute = std::filesystem::absolute(dir).lexically_normal();
    std::filesystem::path walked;
    for (const auto& part : absolute) {
        walked /= part;
        struct stat st {};
        if (::stat(walked.c_str(), &st) != 0) break;  // made by the gateway, searchable
        if (!S_ISDIR(st.st_mode))
            return what + " " + dir.string() + ": " + walked.string() + " is not a directory";
        if ((st.st_mode & S_IXOTH) == 0) {
            char mode[8];
            std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
            return what + " " + dir.string() + ": " + walked.string() + " (mode " + mode +
                   ") is not searchable by other users, so kernels, which run as the sandbox "
                   "uids, could not reach their files; chmod o+x it or choose another directory";
        }
    }
    return {};
}

std::string sandbox_probe::describe() const {
    if (!usable()) return "sandbox unavailable: " + failure;
    return "sandbox: bubblewrap " + bwrap.string() +
           " as a per-session uid in user+pid+net+ipc+uts+cgroup+mount namespaces, seccomp, " +
           "rlimits, " + cgroups.describe();
}

}  // namespace callisto::launcher
