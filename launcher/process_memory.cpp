#include "launcher/process_memory.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace callisto::launcher {

namespace {

std::optional<std::uint64_t> pss_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
    std::string line;
    while (std::getline(in, line))
        if (line.starts_with("Pss:")) {
            std::istringstream fields(line.substr(4));
            std::uint64_t kib = 0;
            if (fields >> kib) return kib * 1024;
        }
    return std::nullopt;
}

// Every thread's children (a child belongs to the thread that forked it).
std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::ifstream children(task.path() / "children");
        pid_t child;
        while (children >> child) out.push_back(child);
    }
    return out;
}

}  // namespace

std::optional<std::uint64_t> process_tree_pss(pid_t root) {
    auto total = pss_of(root);
    if (!total) return std::nullopt;
    std::vector<pid_t> pending = children_of(root);
    // A fork bomb's tree is bounded by the kernel's pids limit; this bound keeps a GET cheap.
    for (std::size_t seen = 0; !pending.empty() && seen < 4096; ++seen) {
        const pid_t pid = pending.back();
        pending.pop_back();
        if (auto pss = pss_of(pid)) *total += *pss;
        for (pid_t c : children_of(pid)) pending.push_back(c);
    }
    return total;
}

}  // namespace callisto::launcher
