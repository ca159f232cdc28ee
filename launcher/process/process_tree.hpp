#pragma once
// A process's children as /proc shows them, for walking a process tree from the host: a
// kernel's PSS summed over its descendants (process_memory), the jail's first process found
// below bwrap (netns_listener). Header-only: programs built from a few launcher sources (the
// netns listener's tests, the egress tests) use it without linking the launcher.

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace callisto::launcher {

// Every thread's children (a child belongs to the thread that forked it); none when the
// process is gone.
inline std::vector<pid_t> children_of(pid_t pid) {
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

}  // namespace callisto::launcher
