#include "launcher/sandbox/cgroup_layout.hpp"

#include <algorithm>

#include <unistd.h>
#include <fstream>
#include <sstream>
#include <vector>

namespace callisto::launcher {

namespace {

std::string read_first_line(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return line;
}

bool has_word(const std::string& words, const std::string& word, char sep) {
    std::istringstream in(words);
    std::string w;
    while (std::getline(in, w, sep))
        if (w == word) return true;
    return false;
}

bool has_all_v2_controllers(const std::filesystem::path& root) {
    const auto controllers = read_first_line(root / "cgroup.controllers");
    return has_word(controllers, "memory", ' ') && has_word(controllers, "pids", ' ') &&
           has_word(controllers, "cpu", ' ') && ::access(root.c_str(), W_OK) == 0;
}

}  // namespace

cgroup_layout cgroup_layout::detect() {
    cgroup_layout v1;
    std::filesystem::path v2_root;
    std::ifstream mountinfo("/proc/self/mountinfo");
    std::string line;
    // "36 35 0:30 / /sys/fs/cgroup/memory rw,... shared:1 - cgroup cgroup rw,memory"
    while (std::getline(mountinfo, line)) {
        const auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
        std::string id, parent, devno, root, mount_point, fstype, source, options;
        head >> id >> parent >> devno >> root >> mount_point;
        tail >> fstype >> source >> options;
        if (root != "/") continue;  // a bind of a sub-cgroup: not a hierarchy we may manage
        if (fstype == "cgroup2" && v2_root.empty() && has_all_v2_controllers(mount_point))
            v2_root = mount_point;
        if (fstype != "cgroup" || ::access(mount_point.c_str(), W_OK) != 0) continue;
        if (has_word(options, "memory", ',')) v1.v1_memory = mount_point;
        if (has_word(options, "pids", ',')) v1.v1_pids = mount_point;
        if (has_word(options, "cpu", ',')) v1.v1_cpu = mount_point;
    }
    cgroup_layout out;
    if (!v2_root.empty()) {
        out.version = cgroup_version::v2;
        out.v2_root = v2_root;
    } else if (!v1.v1_memory.empty() && !v1.v1_pids.empty() && !v1.v1_cpu.empty()) {
        out = v1;
        out.version = cgroup_version::v1;
    }
    return out;
}

std::vector<std::filesystem::path> cgroup_layout::hierarchies() const {
    std::vector<std::filesystem::path> out;
    auto add = [&](const std::filesystem::path& p) {
        if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    };
    if (version == cgroup_version::v2) add(v2_root);
    if (version == cgroup_version::v1) {
        add(v1_memory);
        add(v1_pids);
        add(v1_cpu);
    }
    return out;
}

std::string cgroup_layout::describe() const {
    switch (version) {
        case cgroup_version::v2: return "cgroup v2 at " + v2_root.string() + " (memory, pids, cpu)";
        case cgroup_version::v1:
            return "cgroup v1 (memory at " + v1_memory.string() + ", pids at " + v1_pids.string() +
                   ", cpu at " + v1_cpu.string() + ")";
        case cgroup_version::none: break;
    }
    return "no usable cgroups (rlimits only)";
}

}  // namespace callisto::launcher
