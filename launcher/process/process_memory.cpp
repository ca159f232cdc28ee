#include "launcher/process/process_memory.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "launcher/process/process_tree.hpp"

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
