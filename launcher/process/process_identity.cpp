#include "launcher/process/process_identity.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace callisto::launcher {

std::optional<std::uint64_t> process_start_ticks(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(in, stat);  // one line
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    const auto end_of_comm = stat.rfind(')');
    if (end_of_comm == std::string::npos) return std::nullopt;
    std::istringstream fields(stat.substr(end_of_comm + 1));
    std::string field;
    // Field 3 (state) is the first after the name; the start time is field 22.
    for (int number = 3; fields >> field; ++number) {
        if (number == 3 && (field == "Z" || field == "X")) return std::nullopt;
        if (number == 22) {
            try {
                return std::stoull(field);
            } catch (const std::exception&) {
                return std::nullopt;
            }
        }
    }
    return std::nullopt;
}

std::optional<uid_t> process_real_uid(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("Uid:", 0) != 0) continue;
        std::istringstream fields(line.substr(4));
        unsigned long uid = 0;
        if (fields >> uid) return static_cast<uid_t>(uid);
        return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace callisto::launcher
