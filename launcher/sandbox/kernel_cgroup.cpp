#include "launcher/sandbox/kernel_cgroup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/unique_fd.hpp"
#include "launcher/process/process_kill_list.hpp"

namespace callisto::launcher {

namespace {

constexpr std::uint64_t cpu_period_us = 100000;

// Control files must be written with one write(2); ofstream might split or buffer oddly.
void write_control(const std::filesystem::path& file, const std::string& value) {
    const unique_fd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd ||
        ::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
        const int err = errno;
        throw std::runtime_error("cgroup: writing \"" + value + "\" to " + file.string() + ": " +
                                 std::strerror(err));
    }
}

void make_dir(const std::filesystem::path& dir) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw std::runtime_error("cgroup: mkdir " + dir.string() + ": " + std::strerror(errno));
}

// "oom_kill 3" in memory.events (v2) or memory.oom_control (v1).
std::uint64_t read_counter(const std::filesystem::path& file, const std::string& key) {
    std::ifstream in(file);
    std::string name;
    std::uint64_t value = 0;
    while (in >> name >> value)
        if (name == key) return value;
    return 0;
}

std::uint64_t cpu_quota_us(double cores) {
    return static_cast<std::uint64_t>(std::llround(cores * static_cast<double>(cpu_period_us)));
}

}  // namespace

kernel_cgroup::kernel_cgroup(const cgroup_layout& layout, const std::string& name,
                             const sandbox_policy& policy)
    : layout_(layout) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        throw std::invalid_argument("cgroup: invalid name " + name);
    try {
        if (layout.version == cgroup_version::v2) {
            const auto parent = layout.v2_root / layout.parent;
            // Controllers must be enabled on every level above the kernel's cgroup.
            write_control(layout.v2_root / "cgroup.subtree_control", "+memory +pids +cpu");
            make_dir(parent);
            write_control(parent / "cgroup.subtree_control", "+memory +pids +cpu");
            const auto dir = parent / name;
            make_dir(dir);
            dirs_.push_back(dir);
            memory_dir_ = dir;
            write_control(dir / "memory.max", std::to_string(policy.memory_bytes));
            if (std::filesystem::exists(dir / "memory.swap.max"))
                write_control(dir / "memory.swap.max", "0");
            write_control(dir / "pids.max", std::to_string(policy.pids));
            write_control(dir / "cpu.max", std::to_string(cpu_quota_us(policy.cpu_cores)) + " " +
                                               std::to_string(cpu_period_us));
        } else if (layout.version == cgroup_version::v1) {
            auto create = [&](const std::filesystem::path& mount) {
                make_dir(mount / layout.parent);
                const auto dir = mount / layout.parent / name;
                make_dir(dir);
                dirs_.push_back(dir);
                return dir;
            };
            memory_dir_ = create(layout.v1_memory);
            write_control(memory_dir_ / "memory.limit_in_bytes",
                          std::to_string(policy.memory_bytes));
            // memsw = memory + swap; equal to the memory limit means no swap at all.
            if (std::filesystem::exists(memory_dir_ / "memory.memsw.limit_in_bytes"))
                write_control(memory_dir_ / "memory.memsw.limit_in_bytes",
                              std::to_string(policy.memory_bytes));
            const auto pids =
                layout.v1_pids == layout.v1_memory ? memory_dir_ : create(layout.v1_pids);
            write_control(pids / "pids.max", std::to_string(policy.pids));
            const auto cpu = layout.v1_cpu == layout.v1_memory ? memory_dir_
                             : layout.v1_cpu == layout.v1_pids ? pids
                                                               : create(layout.v1_cpu);
            write_control(cpu / "cpu.cfs_period_us", std::to_string(cpu_period_us));
            write_control(cpu / "cpu.cfs_quota_us", std::to_string(cpu_quota_us(policy.cpu_cores)));
        }
    } catch (...) {
        for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) ::rmdir(it->c_str());
        throw;
    }
}

kernel_cgroup::kernel_cgroup(adopt_existing_t, const cgroup_layout& layout, const std::string& name)
    : layout_(layout) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        throw std::invalid_argument("cgroup: invalid name " + name);
    auto adopt = [&](const std::filesystem::path& mount) {
        const auto dir = mount / layout.parent / name;
        if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end() &&
            std::filesystem::is_directory(dir))
            dirs_.push_back(dir);
        return dir;
    };
    if (layout.version == cgroup_version::v2) {
        memory_dir_ = adopt(layout.v2_root);
    } else if (layout.version == cgroup_version::v1) {
        memory_dir_ = adopt(layout.v1_memory);
        adopt(layout.v1_pids);
        adopt(layout.v1_cpu);
    }
    if (dirs_.empty()) throw std::runtime_error("cgroup " + name + " does not exist");
}

kernel_cgroup::~kernel_cgroup() {
    kill_members();
    // A retry covers exiting tasks the kernel has not released yet.
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it)
        for (int attempt = 0; attempt < 20 && ::rmdir(it->c_str()) != 0 && errno == EBUSY;
             ++attempt)
            ::usleep(5000);
}

void kernel_cgroup::start_entered() {
    const std::lock_guard lock(starts_mutex_);
    ++starts_;
}

void kernel_cgroup::start_left() {
    // Under the lock: a start entering meanwhile waits, so its process is not among the killed.
    const std::lock_guard lock(starts_mutex_);
    if (--starts_ == 0) kill_members();
}

void kernel_cgroup::kill_members() {
    // Once bwrap (the supervised process) was reaped its sandbox normally died with it. Not
    // when bwrap was killed while still setting up (a kernel stopped as it started): its
    // sandbox child then outlives it with parent 1. Whatever is left in the cgroup is that.
    if (dirs_.empty()) return;
    process_kill_list killed;
    const std::string member = layout_.parent + "/" + dirs_.front().filename().string();
    for (pid_t pid : cgroup_procs(dirs_.front()))
        killed.kill_if(pid, [&](pid_t p) { return process_in_cgroup(p, member); });
    killed.wait(std::chrono::seconds(2));
}

std::vector<std::filesystem::path> kernel_cgroup::procs_files() const {
    std::vector<std::filesystem::path> out;
    for (const auto& dir : dirs_) out.push_back(dir / "cgroup.procs");
    return out;
}

std::uint64_t kernel_cgroup::oom_kills() const {
    if (memory_dir_.empty()) return 0;
    if (layout_.version == cgroup_version::v2)
        return read_counter(memory_dir_ / "memory.events", "oom_kill");
    return read_counter(memory_dir_ / "memory.oom_control", "oom_kill");
}

}  // namespace callisto::launcher
