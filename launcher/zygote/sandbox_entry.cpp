#include "launcher/zygote/sandbox_entry.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace callisto::launcher::zygote {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

std::string proc(pid_t pid, const std::string& rest) {
    return "/proc/" + std::to_string(pid) + "/" + rest;
}

struct stat stat_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail("stat " + path);
    return st;
}

bool same_file(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The first process at or below `pid` whose pid namespace is not ours, breadth first through
// /proc/P/task/P/children (a sandbox's pid 1 is its starter's first child or grandchild).
pid_t first_in_other_pid_namespace(pid_t pid) {
    const auto ours = stat_of("/proc/self/ns/pid");
    std::vector<pid_t> level{pid};
    for (int depth = 0; depth < 4 && !level.empty(); ++depth) {
        std::vector<pid_t> next;
        for (pid_t p : level) {
            struct stat st {};
            if (::stat(proc(p, "ns/pid").c_str(), &st) != 0) continue;
            if (!same_file(st, ours)) return p;
            std::ifstream children(proc(p, "task/" + std::to_string(p) + "/children"));
            for (pid_t c; children >> c;) next.push_back(c);
        }
        level = std::move(next);
    }
    throw std::runtime_error("process " + std::to_string(pid) +
                             " runs in no sandbox of its own (the kernel is not sandboxed)");
}

void read_ids(sandbox_member& m) {
    std::ifstream status(proc(m.pid, "status"));
    bool uid = false, gid = false;
    for (std::string line; std::getline(status, line);) {
        std::istringstream words(line);
        std::string key;
        words >> key;
        if (key == "Uid:") uid = static_cast<bool>(words >> m.uid);
        if (key == "Gid:") gid = static_cast<bool>(words >> m.gid);
    }
    if (!uid || !gid) throw std::runtime_error("no Uid or Gid in " + proc(m.pid, "status"));
    if (m.uid == 0 || m.gid == 0)
        throw std::runtime_error("the sandbox runs as root: nothing is run beside it");
}

// From /proc/P/limits: prlimit(2) on another user namespace's process wants CAP_SYS_RESOURCE
// there, which a gateway in a container may lack; root reads the file.
void read_rlimits(sandbox_member& m) {
    static const std::pair<const char*, int> names[] = {
        {"Max cpu time", RLIMIT_CPU},        {"Max file size", RLIMIT_FSIZE},
        {"Max data size", RLIMIT_DATA},      {"Max stack size", RLIMIT_STACK},
        {"Max core file size", RLIMIT_CORE}, {"Max processes", RLIMIT_NPROC},
        {"Max open files", RLIMIT_NOFILE},   {"Max locked memory", RLIMIT_MEMLOCK},
        {"Max address space", RLIMIT_AS},
    };
    std::ifstream limits(proc(m.pid, "limits"));
    auto value = [](const std::string& word) {
        return word == "unlimited" ? RLIM_INFINITY : std::stoull(word);
    };
    for (std::string line; std::getline(limits, line);)
        for (const auto& [name, resource] : names) {
            if (line.rfind(name, 0) != 0 || line.size() <= 26) continue;
            std::istringstream words(line.substr(26));  // the name's column is 26 wide
            std::string soft, hard;
            if (!(words >> soft >> hard)) continue;
            m.rlimits.push_back({resource, value(soft), value(hard)});
        }
    if (m.rlimits.size() != std::size(names))
        throw std::runtime_error("the limits of " + std::to_string(m.pid) + " are unreadable");
}

// Where a hierarchy of /proc/P/cgroup ("ID:controllers:path") is mounted: cgroup v1's
// /sys/fs/cgroup/<controllers> (a named one, "name=systemd", at its name), v2's (ID 0) at
// /sys/fs/cgroup/unified beside v1 controllers, else at /sys/fs/cgroup.
fs::path hierarchy_mount(const std::string& id, const std::string& controllers) {
    const fs::path root = "/sys/fs/cgroup";
    if (id == "0") return fs::exists(root / "unified" / "cgroup.procs") ? root / "unified" : root;
    const auto named = controllers.rfind("name=", 0) == 0 ? controllers.substr(5) : controllers;
    return root / named;
}

std::map<std::string, std::string> cgroups_of(const std::string& file) {
    std::map<std::string, std::string> out;  // "ID:controllers" -> path
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        const auto last = line.rfind(':');
        if (last == std::string::npos) continue;
        out[line.substr(0, last)] = line.substr(last + 1);
    }
    return out;
}

void read_cgroups(sandbox_member& m) {
    const auto ours = cgroups_of("/proc/self/cgroup");
    for (const auto& [key, path] : cgroups_of(proc(m.pid, "cgroup"))) {
        if (auto it = ours.find(key); it != ours.end() && it->second == path) continue;
        const auto colon = key.find(':');
        const auto mount = hierarchy_mount(key.substr(0, colon), key.substr(colon + 1));
        m.cgroup_procs_files.push_back(mount / fs::path(path).relative_path() / "cgroup.procs");
    }
}

void open_namespaces(sandbox_member& m) {
    // The user namespace last, and only when the sandbox has its own (bwrap's; joining our
    // own fails): the others are owned by bwrap's outer user namespace, not the nested one the
    // kernel runs in (--disable-userns), so they are joined while we are root over both.
    std::vector<const char*> kinds = {"ipc", "uts", "net", "cgroup", "pid", "mnt"};
    if (!same_file(stat_of(proc(m.pid, "ns/user")), stat_of("/proc/self/ns/user")))
        kinds.push_back("user");
    for (const char* kind : kinds) {
        const auto path = proc(m.pid, std::string("ns/") + kind);
        unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd) fail("open " + path);
        m.namespaces.push_back(std::move(fd));
    }
}

void write_pid(const fs::path& procs_file) {
    const int fd = ::open(procs_file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail("open " + procs_file.string());
    const bool ok = ::write(fd, "0", 1) == 1;
    const int err = errno;
    ::close(fd);
    errno = err;
    if (!ok) fail("joining " + procs_file.string());
}

}  // namespace

sandbox_member read_sandbox_of(pid_t kernel_pid) {
    sandbox_member m;
    m.pid = first_in_other_pid_namespace(kernel_pid);
    read_ids(m);
    read_rlimits(m);
    read_cgroups(m);
    open_namespaces(m);
    return m;
}

void enter_sandbox(const sandbox_member& member, const std::string& cwd) {
    for (const auto& file : member.cgroup_procs_files) write_pid(file);
    for (const auto& limit : member.rlimits) {
        // Never above ours: raising a hard limit wants a capability the container may not give.
        struct rlimit ours {};
        ::getrlimit(static_cast<__rlimit_resource>(limit.resource), &ours);
        const rlim_t hard = std::min<rlim_t>(limit.hard, ours.rlim_max);
        const struct rlimit value { std::min<rlim_t>(limit.soft, hard), hard };
        if (::setrlimit(static_cast<__rlimit_resource>(limit.resource), &value) != 0)
            fail("setrlimit " + std::to_string(limit.resource));
    }
    // Root's groups go before a user namespace that may deny setgroups (bwrap's does).
    if (::setgroups(0, nullptr) != 0) fail("setgroups");
    for (const auto& ns : member.namespaces)
        if (::setns(ns.get(), 0) != 0) fail("setns");
    if (::chdir(cwd.c_str()) != 0) fail("cd " + cwd);
}

}  // namespace callisto::launcher::zygote
