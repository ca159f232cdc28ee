#include "launcher/sandbox/leftover_reaper.hpp"

#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "common/unique_fd.hpp"
#include "launcher/process/instance_lock.hpp"
#include "launcher/process/process_identity.hpp"
#include "launcher/process/process_kill_list.hpp"

namespace callisto::launcher {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string read_file(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// Strictly below: "/a/b/c" is below "/a/b", "/a/bc" and "/a/b" are not.
bool is_below(std::string_view path, const fs::path& root) {
    std::string prefix = root.string();
    if (prefix.empty() || prefix.back() != '/') prefix += '/';
    return path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        auto octal = [&](std::size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
        if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
            out +=
                static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

std::vector<std::string> split_nul(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < s.size()) {
        auto end = s.find('\0', start);
        if (end == std::string::npos) end = s.size();
        out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

std::string plural(std::size_t n, const std::string& one, const std::string& many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The mount namespace of /proc/<pid> (or /proc/self): its device and inode, nullopt when the
// process is gone.
std::optional<std::pair<dev_t, ino_t>> namespace_of(const fs::path& proc_dir) {
    struct stat st {};
    if (::stat((proc_dir / "ns" / "mnt").c_str(), &st) != 0) return std::nullopt;
    return std::make_pair(st.st_dev, st.st_ino);
}

}  // namespace

bool reap_report::nothing_reaped() const {
    return processes == 0 && mounts == 0 && workdirs == 0 && cgroups == 0 && !runtime_root;
}

std::string reap_report::describe() const {
    std::vector<std::string> parts;
    if (processes) parts.push_back("killed " + plural(processes, "process", "processes"));
    if (mounts) parts.push_back("unmounted " + plural(mounts, "workdir tmpfs", "workdir tmpfs"));
    if (workdirs) parts.push_back("removed " + plural(workdirs, "workdir", "workdirs"));
    if (cgroups) parts.push_back("removed " + plural(cgroups, "cgroup", "cgroups"));
    if (runtime_root) parts.push_back("removed runtime root " + runtime_root->string());
    if (parts.empty()) return "nothing to reap";
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    return out;
}

leftover_reaper::leftover_reaper(leftover_scope scope) : scope_(std::move(scope)) {}

bool leftover_reaper::is_session_workdir(const mount_entry& m) const {
    const auto name = m.mount_point.filename().string();
    return m.mount_point.parent_path() == scope_.workdir_root && is_kernel_id(name) &&
           m.fstype == "tmpfs" && m.source == "callisto-work" &&
           !scope_.adopted_workdirs.contains(name);
}

std::vector<mount_entry> leftover_reaper::mounts_below(std::string_view mountinfo,
                                                       const fs::path& root) {
    std::vector<mount_entry> out;
    std::istringstream in{std::string(mountinfo)};
    std::string line;
    // "36 35 0:30 / /var/lib/callisto/work/<id> rw,nosuid,nodev shared:1 - tmpfs callisto-work
    // rw,size=..."
    while (std::getline(in, line)) {
        const auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
        std::string id, parent, devno, mount_root, mount_point, fstype, source;
        if (!(head >> id >> parent >> devno >> mount_root >> mount_point)) continue;
        tail >> fstype >> source;
        auto point = unescape_octal(mount_point);
        if (!is_below(point, root)) continue;
        out.push_back({point, fstype, unescape_octal(source), devno});
    }
    std::stable_sort(out.begin(), out.end(), [](const mount_entry& a, const mount_entry& b) {
        return a.mount_point.string().size() > b.mount_point.string().size();
    });
    return out;
}

bool leftover_reaper::is_leftover_process(const leftover_scope& scope, uid_t uid,
                                          const std::vector<std::string>& argv) {
    if (scope.uid_count == 0 || uid < scope.uid_first || uid - scope.uid_first >= scope.uid_count)
        return false;
    return std::any_of(argv.begin(), argv.end(), [&](const std::string& arg) {
        return is_below(arg, scope.workdir_root) ||
               (scope.runtime_root && is_below(arg, *scope.runtime_root));
    });
}

bool leftover_reaper::mounts_any_of(std::string_view mountinfo,
                                    const std::set<std::string>& devices) {
    if (devices.empty()) return false;
    std::istringstream in{std::string(mountinfo)};
    std::string line;
    while (std::getline(in, line)) {
        // "36 35 0:30 / /work rw,nosuid,nodev - tmpfs callisto-work rw,...": the third field.
        std::istringstream fields(line);
        std::string id, parent, devno;
        if (fields >> id >> parent >> devno && devices.contains(devno)) return true;
    }
    return false;
}

bool leftover_reaper::is_kernel_id(std::string_view name) {
    if (name.size() != 36) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        const char c = name[i];
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

std::vector<fs::path> leftover_reaper::tagged_cgroups(const leftover_scope& scope) {
    std::vector<fs::path> out;
    if (scope.tag.empty()) return out;
    const std::string prefix = scope.tag + "-";
    for (const auto& hierarchy : scope.cgroups.hierarchies()) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(hierarchy / scope.cgroups.parent, ec)) {
            const auto name = entry.path().filename().string();
            if (name.rfind(prefix, 0) == 0 && entry.is_directory(ec) && !entry.is_symlink(ec) &&
                !scope.adopted_cgroups.contains(name))
                out.push_back(entry.path());
        }
    }
    return out;
}

reap_report leftover_reaper::reap() const {
    reap_report report;
    const auto& root = scope_.workdir_root;

    // 1. Processes: the kernels' (in our cgroups, or in a mount namespace holding one of our
    // workdirs), and any of our uids working on our paths.
    process_kill_list killed;
    const auto cgroups = tagged_cgroups(scope_);
    std::set<std::string> workdir_devices;
    for (const auto& m : mounts_below(read_file("/proc/self/mountinfo"), root))
        if (is_session_workdir(m)) workdir_devices.insert(m.device);
    const auto own_mounts = namespace_of(fs::path("/proc/self"));
    for (int round = 0; round < 3; ++round) {
        const auto before = killed.size();
        for (const auto& dir : cgroups) {
            const std::string member = scope_.cgroups.parent + "/" + dir.filename().string();
            for (pid_t pid : cgroup_procs(dir))
                killed.kill_if(pid, [&](pid_t p) { return process_in_cgroup(p, member); });
        }
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator("/proc", ec)) {
            const auto name = entry.path().filename().string();
            if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
            killed.kill_if(static_cast<pid_t>(std::stol(name)), [&](pid_t p) {
                const auto uid = process_real_uid(p);
                if (!uid || scope_.adopted_uids.contains(*uid)) return false;
                if (is_leftover_process(scope_, *uid,
                                        split_nul(read_file(entry.path() / "cmdline"))))
                    return true;
                // In the range, and in a sandbox around one of our workdirs. The host's own
                // mount namespace holds them all, so only another one counts.
                if (*uid < scope_.uid_first || *uid - scope_.uid_first >= scope_.uid_count)
                    return false;
                const auto mounts = namespace_of(entry.path());
                return mounts && mounts != own_mounts &&
                       mounts_any_of(read_file(entry.path() / "mountinfo"), workdir_devices);
            });
        }
        if (killed.size() == before) break;  // nothing new (a dying sandbox forks no more)
    }
    report.processes = killed.size();
    for (pid_t pid : killed.wait(5s))
        report.problems.push_back("process " + std::to_string(pid) + " did not exit after SIGKILL");

    // 2. cgroups: empty once their processes are gone; the kernel may need a moment to let go.
    for (const auto& dir : cgroups) {
        int rc = -1;
        for (int attempt = 0; attempt < 100; ++attempt) {
            rc = ::rmdir(dir.c_str());
            if (rc == 0 || errno != EBUSY) break;
            std::this_thread::sleep_for(20ms);
        }
        if (rc == 0 || errno == ENOENT)
            ++report.cgroups;
        else
            report.problems.push_back("cgroup " + dir.string() + ": " + std::strerror(errno));
    }

    // 3. The workdirs' tmpfs mounts: <root>/<kernel id>, "callisto-work" (session_workdir).
    std::set<fs::path> unmounted;
    for (const auto& m : mounts_below(read_file("/proc/self/mountinfo"), root)) {
        if (!is_session_workdir(m)) continue;  // reported below when its directory stays
        if (::umount2(m.mount_point.c_str(), MNT_DETACH) == 0) {
            ++report.mounts;
            unmounted.insert(m.mount_point);
        } else {
            report.problems.push_back("umount " + m.mount_point.string() + ": " +
                                      std::strerror(errno));
        }
    }

    // 4. The workdirs themselves. Never remove_all across a mount point: it would empty
    // whatever is mounted there.
    const auto still_mounted = mounts_below(read_file("/proc/self/mountinfo"), root);
    auto holds_a_mount = [&](const fs::path& dir) {
        return std::any_of(still_mounted.begin(), still_mounted.end(), [&](const mount_entry& m) {
            return m.mount_point == dir || is_below(m.mount_point.string(), dir);
        });
    };
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        const auto name = entry.path().filename().string();
        if (instance_lock::is_own_file(name) || scope_.adopted_workdirs.contains(name)) continue;
        const auto& dir = entry.path();
        struct stat st {};
        const bool is_dir = ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        if (!is_kernel_id(name) || !is_dir) {
            report.problems.push_back("left " + dir.string() + ": not a session workdir");
            continue;
        }
        if (holds_a_mount(dir)) {
            report.problems.push_back("left " + dir.string() +
                                      ": something is still mounted there");
            continue;
        }
        const bool owned =
            st.st_uid >= scope_.uid_first && st.st_uid - scope_.uid_first < scope_.uid_count;
        std::error_code rm;
        if (unmounted.count(dir) || owned) {
            fs::remove_all(dir, rm);
        } else if (::rmdir(dir.c_str()) != 0) {  // only if empty: not provably ours otherwise
            report.problems.push_back("left " + dir.string() + ": not empty and owned by uid " +
                                      std::to_string(st.st_uid) + ", outside the sandbox range");
            continue;
        }
        if (rm)
            report.problems.push_back("remove " + dir.string() + ": " + rm.message());
        else
            ++report.workdirs;
    }

    // 5. The previous runtime root: connection files, ipc sockets, context directories.
    if (const auto& runtime = scope_.runtime_root; runtime && fs::exists(*runtime, ec)) {
        if (!instance_lock::runtime_root_marked(*runtime, scope_.tag)) {
            report.problems.push_back("left " + runtime->string() +
                                      ": not marked as this instance's runtime root");
        } else if (!mounts_below(read_file("/proc/self/mountinfo"), *runtime).empty()) {
            report.problems.push_back("left " + runtime->string() +
                                      ": something is mounted below it");
        } else {
            std::error_code rm;
            fs::remove_all(*runtime, rm);
            if (rm)
                report.problems.push_back("remove " + runtime->string() + ": " + rm.message());
            else
                report.runtime_root = *runtime;
        }
    }
    return report;
}

}  // namespace callisto::launcher
