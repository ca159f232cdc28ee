#include "launcher/zygote/kernel_jail.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/unique_fd.hpp"

namespace callisto::launcher::zygote {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

void check(int rc, const std::string& what) {
    if (rc != 0) fail(what);
}

void make_dir(const fs::path& path, mode_t mode = 0755) {
    if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) fail("mkdir " + path.string());
}

void make_dirs(const fs::path& path) {
    fs::path so_far;
    for (const auto& part : path) {
        so_far /= part;
        if (so_far == so_far.root_path()) continue;
        make_dir(so_far);
    }
}

void make_file(const fs::path& path) {
    const unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) fail("create " + path.string());
}

// A bind mount's own flags, set by a second, remounting call (mount(2) ignores them on the
// first): nosuid always, nodev but for device nodes, read-only when asked.
enum class bind_kind { read_only, read_write, device };

void bind(const fs::path& source, const fs::path& target, bind_kind kind) {
    check(::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr),
          "bind " + source.string());
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID;
    if (kind != bind_kind::device) flags |= MS_NODEV;
    if (kind == bind_kind::read_only) flags |= MS_RDONLY;
    check(::mount(nullptr, target.c_str(), nullptr, flags, nullptr), "remount " + target.string());
}

// A bind target must be of the source's kind: a directory for a directory, a file otherwise.
void bind_like_source(const fs::path& source, const fs::path& target, bind_kind kind) {
    struct stat st {};
    if (::stat(source.c_str(), &st) != 0) fail("stat " + source.string());
    make_dirs(target.parent_path());
    if (S_ISDIR(st.st_mode))
        make_dir(target);
    else
        make_file(target);
    bind(source, target, kind);
}

void mount_tmpfs(const fs::path& target, const std::string& options, unsigned long flags) {
    check(::mount("tmpfs", target.c_str(), "tmpfs", flags, options.c_str()),
          "mount tmpfs on " + target.string());
}

void build_dev(const fs::path& dev, std::uint64_t shm_bytes) {
    make_dir(dev);
    // As bwrap's --dev: nosuid and nodev on the tmpfs; the nodes are their own bind mounts.
    mount_tmpfs(dev, "mode=0755", MS_NOSUID | MS_NODEV);
    for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
        make_file(dev / node);
        bind(fs::path("/dev") / node, dev / node, bind_kind::device);
    }
    make_dir(dev / "pts");
    check(::mount("devpts", (dev / "pts").c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=620"),
          "mount devpts");
    check(::symlink("pts/ptmx", (dev / "ptmx").c_str()), "symlink /dev/ptmx");
    check(::symlink("/proc/self/fd", (dev / "fd").c_str()), "symlink /dev/fd");
    check(::symlink("/proc/self/fd/0", (dev / "stdin").c_str()), "symlink /dev/stdin");
    check(::symlink("/proc/self/fd/1", (dev / "stdout").c_str()), "symlink /dev/stdout");
    check(::symlink("/proc/self/fd/2", (dev / "stderr").c_str()), "symlink /dev/stderr");
    make_dir(dev / "shm");
    mount_tmpfs(dev / "shm", "mode=1777,size=" + std::to_string(shm_bytes), MS_NOSUID | MS_NODEV);
}

void bring_up_loopback() {
    unique_fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s) fail("socket for lo");
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    check(::ioctl(s.get(), SIOCGIFFLAGS, &ifr), "SIOCGIFFLAGS lo");
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    check(::ioctl(s.get(), SIOCSIFFLAGS, &ifr), "bringing lo up");
}

}  // namespace

void join_cgroups(const std::vector<fs::path>& procs_files) {
    for (const auto& file : procs_files) {
        unique_fd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
        if (!fd || ::write(fd.get(), "0", 1) != 1) fail("joining the cgroup " + file.string());
    }
}

void enter_namespaces() {
    check(::unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP),
          "unshare");
    check(::sethostname(sandbox_hostname, std::strlen(sandbox_hostname)), "sethostname");
    bring_up_loopback();  // ipykernel binds a loopback pipe even with the ipc transport
}

void join_namespaces_of(pid_t pid) {
    // All opened first: /proc is the host's until the mount namespace changes.
    const std::string dir = "/proc/" + std::to_string(pid) + "/ns/";
    std::vector<unique_fd> namespaces;
    for (const char* kind : {"ipc", "uts", "net", "cgroup", "mnt"}) {
        namespaces.emplace_back(::open((dir + kind).c_str(), O_RDONLY | O_CLOEXEC));
        if (!namespaces.back()) fail("open " + dir + kind);
    }
    for (const auto& ns : namespaces) check(::setns(ns.get(), 0), "setns");
}

void build_root(const sandbox_layout& layout, const fs::path& scratch) {
    // Nothing mounted from here on reaches the host's namespace, or comes back from it.
    check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), "making / private");
    const fs::path root = scratch;
    mount_tmpfs(root, "mode=0755", MS_NOSUID | MS_NODEV);

    make_dir(root / "usr");
    bind("/usr", root / "usr", bind_kind::read_only);
    for (const char* link : sandbox_usr_symlinks()) {
        const fs::path host = fs::path("/") / link;
        struct stat st {};
        if (::lstat(host.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
            check(::symlink((std::string("usr/") + link).c_str(), (root / link).c_str()),
                  "symlink " + host.string());
    }
    make_dir(root / "etc");
    for (const char* file : sandbox_etc_files()) {
        struct stat st {};
        if (::stat(file, &st) != 0) continue;  // as bwrap's --ro-bind-try
        bind_like_source(file, root / fs::path(file).relative_path(), bind_kind::read_only);
    }
    bind_like_source(layout.passwd_file, root / "etc/passwd", bind_kind::read_only);
    bind_like_source(layout.group_file, root / "etc/group", bind_kind::read_only);

    // This process is pid 1 of the new pid namespace: the procfs mounted here is that
    // namespace's, showing only the kernel's own processes.
    make_dir(root / "proc");
    check(
        ::mount("proc", (root / "proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr),
        "mount /proc");
    build_dev(root / "dev", layout.tmp_bytes);
    make_dir(root / "tmp");
    mount_tmpfs(root / "tmp", "mode=1777,size=" + std::to_string(layout.tmp_bytes),
                MS_NOSUID | MS_NODEV);
    bind_like_source(layout.workdir, root / fs::path(sandbox_workdir).relative_path(),
                     bind_kind::read_write);
    bind_like_source(layout.workdir, root / fs::path(sandbox_home).relative_path(),
                     bind_kind::read_write);
    bind_like_source(layout.runtime_dir, root / layout.runtime_dir.relative_path(),
                     bind_kind::read_write);
    // As bwrap's second bind (sandbox_layout.hpp), so both sandboxes mount the same.
    bind_like_source(layout.runtime_dir, root / fs::path(sandbox_runtime_dir).relative_path(),
                     bind_kind::read_write);
    // The kernelspec's environment (a venv, a conda prefix), read-only at its host paths; after
    // /tmp, as bwrap binds it, so one under /tmp shows inside the kernel's own /tmp.
    for (const auto& path : layout.environment)
        bind_like_source(path, root / path.relative_path(), bind_kind::read_only);

    // pivot_root(".", "."): the old root ends up on top of the new one, then goes.
    check(::chdir(root.c_str()), "chdir to the new root");
    check(static_cast<int>(::syscall(SYS_pivot_root, ".", ".")), "pivot_root");
    check(::umount2(".", MNT_DETACH), "detaching the old root");
    check(::chdir("/"), "chdir /");
    check(::mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                  nullptr),
          "remount /dev read-only");
    check(::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                  nullptr),
          "remount / read-only");
}

void apply_rlimits(const std::vector<resource_limit>& limits) {
    for (const auto& limit : limits) {
        const struct rlimit value { limit.soft, limit.hard };
        check(::setrlimit(static_cast<__rlimit_resource>(limit.resource), &value),
              "setrlimit " + std::to_string(limit.resource));
    }
}

void become_unprivileged(std::optional<uid_t> uid, std::optional<gid_t> gid, bool drop_bounding) {
    if (drop_bounding)
        for (int cap = 0; ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; ++cap)
            check(::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0),
                  "dropping capability " + std::to_string(cap));
    if (uid || gid) {
        check(::setgroups(0, nullptr), "setgroups");
        if (gid) check(::setresgid(*gid, *gid, *gid), "setresgid");
        if (uid) check(::setresuid(*uid, *uid, *uid), "setresuid");
    }
    // A change of uid made the process undumpable (fs.suid_dumpable); an execve would have
    // made it dumpable again, and the kernel's own /proc/self must be readable by its children.
    check(::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "PR_SET_DUMPABLE");
}

void confine(const std::string& seccomp_bpf) {
    check(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS");
    if (seccomp_bpf.empty() || seccomp_bpf.size() % sizeof(sock_filter) != 0) {
        errno = EINVAL;
        fail("seccomp program");
    }
    sock_fprog program{};
    program.len = static_cast<unsigned short>(seccomp_bpf.size() / sizeof(sock_filter));
    program.filter = reinterpret_cast<sock_filter*>(const_cast<char*>(seccomp_bpf.data()));
    check(::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0), "installing seccomp");
}

}  // namespace callisto::launcher::zygote
