#pragma once
// Finds kernelspecs in the standard Jupyter data paths. Earlier directories win on a name clash.
// With a check (kernelspec_check.hpp), a kernelspec it finds fault with is refused: not
// offered, its reason logged and kept for whoever asks for it by name.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/logger.hpp"
#include "launcher/kernelspec/kernelspec.hpp"

namespace callisto::launcher {

class kernelspec_catalog {
public:
    // $JUPYTER_PATH entries, ~/.local/share/jupyter, /usr/local/share/jupyter, /usr/share/jupyter,
    // each with "/kernels" appended, in that order.
    static std::vector<std::filesystem::path> default_search_path();

    // "" when the kernelspec may be offered, else why not.
    using check_fn = std::function<std::string(const kernelspec&)>;

    explicit kernelspec_catalog(std::vector<std::filesystem::path> kernel_dirs, logger log = {},
                                check_fn check = {});

    // Rescans the directories; specs that fail to load are logged and skipped, specs the check
    // refuses are logged and kept aside.
    void refresh();

    std::optional<kernelspec> find(std::string_view name) const;
    const std::vector<kernelspec>& all() const { return specs_; }
    // Why the kernelspec of this name was refused; nullopt when it was not (offered, or not
    // there at all). A refused kernelspec still hides one of its name in a later directory:
    // the admin's choice failed, and another kernel of that name would be a surprise.
    [[nodiscard]] std::optional<std::string> refusal(std::string_view name) const;
    // Name -> reason, for every refused kernelspec.
    const std::map<std::string, std::string>& refused() const { return refused_; }
    // "python3" when present, else the first spec by name, else "".
    std::string default_name() const;

private:
    std::vector<std::filesystem::path> dirs_;
    std::vector<kernelspec> specs_;
    std::map<std::string, std::string> refused_;
    logger log_;
    check_fn check_;
};

}  // namespace callisto::launcher
