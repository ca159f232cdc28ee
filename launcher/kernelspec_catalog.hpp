#pragma once
// Finds kernelspecs in the standard Jupyter data paths. Earlier directories win on a name clash.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/logger.hpp"
#include "launcher/kernelspec.hpp"

namespace callisto::launcher {

class kernelspec_catalog {
public:
    // $JUPYTER_PATH entries, ~/.local/share/jupyter, /usr/local/share/jupyter, /usr/share/jupyter,
    // each with "/kernels" appended, in that order.
    static std::vector<std::filesystem::path> default_search_path();

    explicit kernelspec_catalog(std::vector<std::filesystem::path> kernel_dirs, logger log = {});

    // Rescans the directories; specs that fail to load are logged and skipped.
    void refresh();

    std::optional<kernelspec> find(std::string_view name) const;
    const std::vector<kernelspec>& all() const { return specs_; }
    // "python3" when present, else the first spec by name, else "".
    std::string default_name() const;

private:
    std::vector<std::filesystem::path> dirs_;
    std::vector<kernelspec> specs_;
    logger log_;
};

}  // namespace callisto::launcher
