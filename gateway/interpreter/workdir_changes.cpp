#include "gateway/interpreter/workdir_changes.hpp"

#include <array>
#include <string_view>

namespace callisto::gateway::interpreter {

bool kernels_own_directory(const std::string& path) {
    // Where IPython, Jupyter, matplotlib and pip keep their own state in a kernel's HOME.
    static constexpr std::array<std::string_view, 5> own = {".ipython", ".cache", ".local",
                                                            ".config", ".jupyter"};
    for (auto name : own)
        if (path == name) return true;
    return false;
}

workdir_state capture_workdir(const workdir_files& files, std::size_t max_entries) {
    workdir_state state;
    bool truncated = false;
    auto error = files.walk(
        max_entries, true, truncated, [&state](const std::string& path, const struct stat& st) {
            if (S_ISREG(st.st_mode))
                state.files[path] = file_stamp{
                    static_cast<std::uint64_t>(st.st_size),
                    static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                    static_cast<std::uint64_t>(st.st_ino)};
            return S_ISDIR(st.st_mode) && !kernels_own_directory(path);
        });
    state.complete = !error && !truncated;
    return state;
}

std::vector<std::string> changed_files(const workdir_state& before, const workdir_state& after,
                                       std::size_t max_paths) {
    std::vector<std::string> out;
    std::size_t more = 0;
    for (const auto& [path, stamp] : after.files) {
        auto it = before.files.find(path);
        if (it != before.files.end() && it->second == stamp) continue;
        if (out.size() < max_paths) {
            out.push_back(path);
        } else {
            ++more;
        }
    }
    if (more > 0) out.push_back("(" + std::to_string(more) + " more)");
    if (!before.complete || !after.complete)
        out.push_back("(the workdir holds more files than were compared)");
    return out;
}

}  // namespace callisto::gateway::interpreter
