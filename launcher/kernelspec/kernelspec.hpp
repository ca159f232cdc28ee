#pragma once
// A kernelspec (kernel.json plus its resource directory), as jupyter_client reads it.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace callisto::launcher {

enum class interrupt_mode { signal, message };

struct kernelspec {
    std::string name;                    // the directory name, lower-cased
    std::filesystem::path resource_dir;  // the directory holding kernel.json and logos
    std::vector<std::string> argv;
    std::string display_name;
    std::string language;
    interrupt_mode interrupt = interrupt_mode::signal;
    std::map<std::string, std::string> env;
    nlohmann::json metadata = nlohmann::json::object();

    // The "spec" object of /api/kernelspecs: kernel.json's fields as read.
    nlohmann::json spec_json() const;

    // Reads <dir>/kernel.json. Throws std::runtime_error naming the file and the problem.
    static kernelspec load(const std::filesystem::path& dir);
};

}  // namespace callisto::launcher
