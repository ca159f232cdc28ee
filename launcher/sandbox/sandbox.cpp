#include "launcher/sandbox/sandbox.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "launcher/kernelspec/interpreter_environment.hpp"
#include "launcher/process/memfd.hpp"
#include "launcher/sandbox/sandboxed_kernel.hpp"

namespace callisto::launcher {

namespace {

void write_file(const std::filesystem::path& file, const std::string& content) {
    const unique_fd fd(
        ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd)
        throw std::runtime_error("sandbox: create " + file.string() + ": " + std::strerror(errno));
    if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
        ::fchmod(fd.get(), 0644) != 0) {
        const int err = errno;
        throw std::runtime_error("sandbox: write " + file.string() + ": " + std::strerror(err));
    }
}

void give_to(const std::filesystem::path& path, const sandbox_identity& who) {
    if (::lchown(path.c_str(), who.uid, who.gid) != 0)
        throw std::runtime_error("sandbox: chown " + path.string() + ": " + std::strerror(errno));
}

bool is_symlink(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

unsigned long rl(std::uint64_t v) { return static_cast<unsigned long>(v); }

void add_namespaces(std::vector<std::string>& a) {
    // --disable-userns: the kernel cannot make its own user namespace, where it would hold
    // capabilities again. --new-session: no controlling tty (TIOCSTI).
    a.insert(a.end(), {"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                       "--unshare-uts", "--unshare-cgroup", "--disable-userns", "--hostname",
                       sandbox_hostname, "--new-session"});
}

// A root that is an empty tmpfs, then only what Python needs, read-only.
void add_system_root(std::vector<std::string>& a) {
    a.insert(a.end(), {"--tmpfs", "/", "--ro-bind", "/usr", "/usr"});
    for (const char* link : sandbox_usr_symlinks()) {
        const std::string host = std::string("/") + link;
        if (is_symlink(host)) a.insert(a.end(), {"--symlink", std::string("usr/") + link, host});
    }
    a.insert(a.end(), {"--dir", "/etc"});
    for (const char* file : sandbox_etc_files()) a.insert(a.end(), {"--ro-bind-try", file, file});
}

// A fresh procfs for the new pid namespace (not the host's), a minimal /dev, no /sys at all,
// size-capped /tmp and /dev/shm.
void add_scratch_mounts(std::vector<std::string>& a, std::uint64_t tmp_bytes) {
    const auto size = std::to_string(tmp_bytes);
    a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/tmp",
                       "--size", size, "--tmpfs", "/dev/shm"});
}

// After /tmp: an environment under /tmp shows inside the kernel's own /tmp.
void add_environment(std::vector<std::string>& a,
                     const std::vector<std::filesystem::path>& environment) {
    for (const auto& path : environment)
        a.insert(a.end(), {"--ro-bind", path.string(), path.string()});
}

}  // namespace

sandbox::sandbox(std::filesystem::path bwrap, cgroup_layout cgroups, std::string cgroup_tag)
    : bwrap_(std::move(bwrap)), cgroups_(std::move(cgroups)), cgroup_tag_(std::move(cgroup_tag)) {}

std::shared_ptr<kernel_cgroup> sandbox::make_cgroup(const std::string& name,
                                                    const sandbox_policy& policy) const {
    if (cgroups_.version == cgroup_version::none) return nullptr;
    return std::make_shared<kernel_cgroup>(
        cgroups_, cgroup_tag_.empty() ? name : cgroup_tag_ + "-" + name, policy);
}

std::shared_ptr<kernel_cgroup> sandbox::adopt_cgroup(const std::string& name) const {
    if (name.empty() || cgroups_.version == cgroup_version::none) return nullptr;
    return std::make_shared<kernel_cgroup>(adopt_existing, cgroups_, name);
}

std::shared_ptr<sandboxed_kernel> sandbox::adopt(const sandbox_policy& policy,
                                                 const sandbox_identity& who,
                                                 std::shared_ptr<kernel_cgroup> cgroup) const {
    return std::make_shared<sandboxed_kernel>(spawn_description{}, sandbox_layout{}, policy, who,
                                              std::move(cgroup), unique_fd(), unique_fd());
}

std::shared_ptr<sandboxed_kernel> sandbox::prepare(
    const spawn_description& inner, const sandbox_policy& policy, const sandbox_identity& who,
    const std::filesystem::path& workdir, const std::filesystem::path& runtime_dir,
    const std::filesystem::path& connection_file, std::shared_ptr<kernel_cgroup> cgroup) const {
    if (who.uid == 0 || who.gid == 0) throw std::invalid_argument("sandbox: never as uid or gid 0");
    if (inner.argv.empty()) throw std::invalid_argument("sandbox: empty command");
    // What of the host the kernel's interpreter needs besides /usr: a venv, a conda prefix.
    auto environment =
        find_interpreter_environment(inner.argv.front(), sandbox_search_path).sandbox_paths;

    // The kernel binds its ipc sockets in the runtime dir and reads its connection file; once
    // the sockets exist the gateway takes the directory back (kernel_runtime_dir::seal).
    const auto passwd = runtime_dir / "passwd";
    const auto group = runtime_dir / "group";
    write_file(passwd,
               "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
               "kernel:x:" +
                   std::to_string(who.uid) + ":" + std::to_string(who.gid) +
                   ":Callisto kernel:" + sandbox_workdir +
                   ":/bin/sh\n"
                   "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    write_file(group, "root:x:0:\nkernel:x:" + std::to_string(who.gid) + ":\nnogroup:x:65534:\n");
    give_to(runtime_dir, who);
    give_to(connection_file, who);

    sandbox_layout layout{workdir, runtime_dir, passwd, group, policy.tmp_bytes};
    layout.environment = std::move(environment);
    unique_fd seccomp_fd = seccomp_.make_fd();
    unique_fd options_fd;
    spawn_description out;
    // bwrap's options, host paths among them, go in a memfd (--args) rather than its
    // command line: bwrap is the sandbox's pid 1, whose /proc/1/cmdline the kernel reads.
    std::vector<std::string> a;
    add_namespaces(a);
    // Lifetime: dies with its spawner, unless it is to outlive the gateway; then the
    // kernel's cgroup is what kills a sandbox left behind by a bwrap that was killed.
    if (!(inner.outlive_gateway && cgroup)) a.insert(a.end(), "--die-with-parent");
    add_system_root(a);
    a.insert(a.end(), {"--ro-bind", layout.passwd_file.string(), "/etc/passwd",  //
                       "--ro-bind", layout.group_file.string(), "/etc/group"});
    add_scratch_mounts(a, layout.tmp_bytes);
    a.insert(a.end(), {"--bind", layout.workdir.string(), sandbox_workdir,  //
                       "--bind", layout.workdir.string(), sandbox_home,
                       // At its host path, so the connection file's ipc paths hold inside,
                       // and where the kernel's command line names its files.
                       "--bind", layout.runtime_dir.string(), layout.runtime_dir.string(),  //
                       "--bind", layout.runtime_dir.string(), sandbox_runtime_dir});
    add_environment(a, layout.environment);
    a.insert(a.end(), {"--chdir", sandbox_workdir,
                       // /dev is bwrap's own tmpfs: read-only too (the device nodes stay
                       // usable; /dev/shm is its own capped mount).
                       "--remount-ro", "/dev", "--remount-ro", "/", "--cap-drop", "ALL",
                       "--seccomp", std::to_string(seccomp_fd.get())});
    std::string options;
    for (const auto& option : a) options.append(option).push_back('\0');
    options_fd = memfd_holding("callisto-bwrap-args", options);
    out.argv = {bwrap_.string(), "--args", std::to_string(options_fd.get()), "--"};
    // The kernel's command names files of its runtime directory (its connection file, the
    // bootstrap) by the directory's second mount, whose path tells nothing of the host.
    const std::string host_dir = layout.runtime_dir.string() + "/";
    const std::string inside_dir = std::string(sandbox_runtime_dir) + "/";
    for (std::string arg : inner.argv) {
        for (auto at = arg.find(host_dir); at != std::string::npos;
             at = arg.find(host_dir, at + inside_dir.size()))
            arg.replace(at, host_dir.size(), inside_dir);
        out.argv.push_back(std::move(arg));
    }

    // kernel_command already reduced the host environment to a safe few; keep those and
    // the kernelspec's and client's variables, but not the host's paths or parent pid.
    out.env = inner.env;
    // The gateway's pid means nothing in the kernel's pid namespace, where its parent is
    // pid 1, and ipykernel's parent poller would exit at once; --die-with-parent does its job.
    out.env.erase("JPY_PARENT_PID");
    out.env["PATH"] = sandbox_search_path;
    out.env["HOME"] = sandbox_workdir;
    out.env["USER"] = out.env["LOGNAME"] = "kernel";
    out.env["TMPDIR"] = "/tmp";
    out.env["SHELL"] = "/bin/sh";

    out.cwd = "/";  // bwrap changes into the workdir itself (--chdir)
    out.uid = who.uid;
    out.gid = who.gid;
    out.inherit_fds = {seccomp_fd.get(), options_fd.get()};
    if (cgroup) out.cgroup_procs_files = cgroup->procs_files();
    out.outlive_gateway = inner.outlive_gateway && cgroup;
    // RLIMIT_NPROC counts the uid's processes host-wide; with a uid per session it is a
    // second pids limit. RLIMIT_CPU: SIGXCPU at the limit, SIGKILL 5 s later.
    out.rlimits = {
        {RLIMIT_NPROC, rl(policy.pids), rl(policy.pids)},
        {RLIMIT_CPU, rl(policy.cpu_time_seconds), rl(policy.cpu_time_seconds + 5)},
        {RLIMIT_FSIZE, rl(policy.file_size_bytes), rl(policy.file_size_bytes)},
        {RLIMIT_NOFILE, rl(policy.open_files), rl(policy.open_files)},
        {RLIMIT_CORE, 0, 0},
    };
    if (cgroups_.version == cgroup_version::none)  // the only memory cap left
        out.rlimits.push_back({RLIMIT_AS, rl(policy.memory_bytes), rl(policy.memory_bytes)});
    return std::make_shared<sandboxed_kernel>(std::move(out), layout, policy, who,
                                              std::move(cgroup), std::move(seccomp_fd),
                                              std::move(options_fd));
}

spawn_description sandbox::trial(const std::vector<std::string>& argv,
                                 const std::vector<std::filesystem::path>& environment,
                                 const sandbox_identity& who,
                                 const std::map<std::string, std::string>& env) const {
    if (who.uid == 0 || who.gid == 0) throw std::invalid_argument("sandbox: never as uid or gid 0");
    spawn_description out;
    out.argv = {bwrap_.string()};
    add_namespaces(out.argv);
    out.argv.push_back("--die-with-parent");
    add_system_root(out.argv);
    add_scratch_mounts(out.argv, 16u << 20);
    add_environment(out.argv, environment);
    out.argv.insert(out.argv.end(), {"--chdir", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/",
                                     "--cap-drop", "ALL", "--"});
    out.argv.insert(out.argv.end(), argv.begin(), argv.end());
    out.env = env;
    out.env["PATH"] = sandbox_search_path;
    out.env["HOME"] = "/tmp";
    out.env["TMPDIR"] = "/tmp";
    out.cwd = "/";
    out.uid = who.uid;
    out.gid = who.gid;
    // No cgroup: rlimits bound what an environment's start-up code (a .pth file) could do.
    // RLIMIT_NPROC counts the uid's processes host-wide, an adopted kernel's among them (at
    // most its --pids-limit): generous, but a bound.
    out.rlimits = {
        {RLIMIT_NPROC, 1024, 1024}, {RLIMIT_FSIZE, 64ul << 20, 64ul << 20}, {RLIMIT_CORE, 0, 0}};
    return out;
}

}  // namespace callisto::launcher
