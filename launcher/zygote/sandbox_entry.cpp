#include "launcher/zygote/sandbox_entry.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <tuple>

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
    const auto ids = parse_status_ids(status);
    if (!ids) throw std::runtime_error("no Uid or Gid in " + proc(m.pid, "status"));
    std::tie(m.uid, m.gid) = *ids;
    if (m.uid == 0 || m.gid == 0)
        throw std::runtime_error("the sandbox runs as root: nothing is run beside it");
}

// From /proc/P/limits: prlimit(2) on another user namespace's process wants CAP_SYS_RESOURCE
// there, which a gateway in a container may lack; root reads the file.
void read_rlimits(sandbox_member& m) {
    std::ifstream limits(proc(m.pid, "limits"));
    try {
        m.rlimits = parse_limits(limits);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error("the limits of " + std::to_string(m.pid) +
                                 " are unreadable: " + e.what());
    }
}

std::map<std::string, std::string> cgroups_of(const std::string& file) {
    std::ifstream in(file);
    return parse_cgroups(in);
}

void read_cgroups(sandbox_member& m) {
    const auto ours = cgroups_of("/proc/self/cgroup");
    const bool v2_beside_v1 = fs::exists("/sys/fs/cgroup/unified/cgroup.procs");
    for (const auto& [key, path] : cgroups_of(proc(m.pid, "cgroup"))) {
        if (auto it = ours.find(key); it != ours.end() && it->second == path) continue;
        const auto colon = key.find(':');
        const auto mount =
            hierarchy_mount(key.substr(0, colon), key.substr(colon + 1), v2_beside_v1);
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
    const unique_fd fd(::open(procs_file.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) fail("open " + procs_file.string());
    if (::write(fd.get(), "0", 1) != 1) fail("joining " + procs_file.string());
}

}  // namespace

std::optional<std::pair<uid_t, gid_t>> parse_status_ids(std::istream& status) {
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    for (std::string line; std::getline(status, line);) {
        std::istringstream words(line);
        std::string key;
        words >> key;
        if (uid_t v = 0; key == "Uid:" && words >> v) uid = v;
        if (gid_t v = 0; key == "Gid:" && words >> v) gid = v;
    }
    if (!uid || !gid) return std::nullopt;
    return std::pair{*uid, *gid};
}

std::vector<resource_limit> parse_limits(std::istream& limits) {
    static const std::pair<const char*, int> names[] = {
        {"Max cpu time", RLIMIT_CPU},        {"Max file size", RLIMIT_FSIZE},
        {"Max data size", RLIMIT_DATA},      {"Max stack size", RLIMIT_STACK},
        {"Max core file size", RLIMIT_CORE}, {"Max processes", RLIMIT_NPROC},
        {"Max open files", RLIMIT_NOFILE},   {"Max locked memory", RLIMIT_MEMLOCK},
        {"Max address space", RLIMIT_AS},
    };
    auto value = [](const std::string& word) -> std::optional<rlim_t> {
        if (word == "unlimited") return RLIM_INFINITY;
        if (word.empty() || !std::all_of(word.begin(), word.end(), ::isdigit)) return std::nullopt;
        errno = 0;
        const auto v = std::strtoull(word.c_str(), nullptr, 10);
        if (errno == ERANGE) return std::nullopt;
        return static_cast<rlim_t>(v);
    };
    std::vector<resource_limit> out;
    for (std::string line; std::getline(limits, line);)
        for (const auto& [name, resource] : names) {
            // The name's column is 26 wide; "Max processes" must not take "Max processes2".
            if (line.rfind(name, 0) != 0 || line.size() <= 26 ||
                line.find_first_not_of(' ', std::strlen(name)) < 26)
                continue;
            std::istringstream words(line.substr(26));
            std::string soft, hard;
            if (!(words >> soft >> hard)) continue;
            const auto s = value(soft), h = value(hard);
            if (!s || !h) throw std::runtime_error("'" + line + "' has no number");
            out.push_back({resource, *s, *h});
        }
    for (const auto& [name, resource] : names)
        if (std::none_of(out.begin(), out.end(),
                         [r = resource](const resource_limit& l) { return l.resource == r; }))
            throw std::runtime_error(std::string("no '") + name + "' line");
    if (out.size() != std::size(names)) throw std::runtime_error("a limit given twice");
    return out;
}

std::map<std::string, std::string> parse_cgroups(std::istream& cgroup) {
    std::map<std::string, std::string> out;  // "ID:controllers" -> path
    for (std::string line; std::getline(cgroup, line);) {
        // The path is all after the second colon: a cgroup's name may hold colons of its own.
        const auto first = line.find(':');
        const auto second = first == std::string::npos ? first : line.find(':', first + 1);
        if (second == std::string::npos || line.size() == second + 1) continue;
        out[line.substr(0, second)] = line.substr(second + 1);
    }
    return out;
}

fs::path hierarchy_mount(const std::string& id, const std::string& controllers, bool v2_beside_v1) {
    const fs::path root = "/sys/fs/cgroup";
    if (id == "0") return v2_beside_v1 ? root / "unified" : root;
    const auto named = controllers.rfind("name=", 0) == 0 ? controllers.substr(5) : controllers;
    return root / named;
}

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
