#pragma once
// Everything needed to start one process. This is the seam the sandbox wraps: a sandbox turns
// one spawn_description into another (e.g. prefixing bwrap and its arguments) and adds limits.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace callisto::launcher {

struct spawn_description {
    std::vector<std::string> argv;            // argv[0] is an absolute path or found on PATH of env
    std::map<std::string, std::string> env;   // the complete environment (nothing inherited)
    std::filesystem::path cwd;                // empty: inherit
};

}  // namespace callisto::launcher
