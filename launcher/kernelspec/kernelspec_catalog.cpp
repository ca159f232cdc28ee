#include "launcher/kernelspec/kernelspec_catalog.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <system_error>

namespace callisto::launcher {

namespace {

std::string env_or_empty(const char* name) {
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

}  // namespace

std::vector<std::filesystem::path> kernelspec_catalog::default_search_path() {
    std::vector<std::filesystem::path> dirs;

    const auto jupyter_path = env_or_empty("JUPYTER_PATH");
    std::size_t start = 0;
    while (start <= jupyter_path.size()) {
        auto end = jupyter_path.find(':', start);
        if (end == std::string::npos) end = jupyter_path.size();
        if (end > start)
            dirs.emplace_back(std::filesystem::path(jupyter_path.substr(start, end - start)) /
                              "kernels");
        start = end + 1;
    }

    // jupyter_core's jupyter_data_dir() on Linux.
    if (auto data_dir = env_or_empty("JUPYTER_DATA_DIR"); !data_dir.empty()) {
        dirs.emplace_back(std::filesystem::path(data_dir) / "kernels");
    } else if (auto xdg = env_or_empty("XDG_DATA_HOME"); !xdg.empty()) {
        dirs.emplace_back(std::filesystem::path(xdg) / "jupyter" / "kernels");
    } else if (auto home = env_or_empty("HOME"); !home.empty()) {
        dirs.emplace_back(std::filesystem::path(home) / ".local" / "share" / "jupyter" / "kernels");
    }

    dirs.emplace_back("/usr/local/share/jupyter/kernels");
    dirs.emplace_back("/usr/share/jupyter/kernels");
    return dirs;
}

kernelspec_catalog::kernelspec_catalog(std::vector<std::filesystem::path> kernel_dirs, logger log,
                                       check_fn check)
    : dirs_(std::move(kernel_dirs)), log_(log.component("kernelspecs")), check_(std::move(check)) {
    refresh();
}

void kernelspec_catalog::refresh() {
    std::map<std::string, kernelspec> found;  // sorted by name, so all() is stable
    for (const auto& dir : dirs_) {
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) continue;

        // Sorted so that which of two case-variant directories wins does not depend on readdir.
        std::vector<std::filesystem::path> entries;
        for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end;
             it.increment(ec)) {
            std::error_code type_ec;
            if (it->is_directory(type_ec)) entries.push_back(it->path());
        }
        if (ec) {
            log_.warn("cannot list " + dir.string() + ": " + ec.message());
            continue;
        }
        std::sort(entries.begin(), entries.end());

        for (const auto& entry : entries) {
            std::error_code exists_ec;
            if (!std::filesystem::exists(entry / "kernel.json", exists_ec)) continue;
            try {
                auto spec = kernelspec::load(entry);
                if (found.contains(spec.name)) {
                    log_.debug("kernelspec " + entry.string() + " hidden by " +
                               found.at(spec.name).resource_dir.string());
                    continue;
                }
                auto name = spec.name;
                found.emplace(std::move(name), std::move(spec));
            } catch (const std::exception& e) {
                log_.warn(std::string("skipping ") + e.what());
            }
        }
    }

    specs_.clear();
    specs_.reserve(found.size());
    refused_.clear();
    for (auto& [name, spec] : found) {
        auto why = check_ ? check_(spec) : std::string();
        if (why.empty()) {
            specs_.push_back(std::move(spec));
            continue;
        }
        log_.warn("kernelspec " + name + " (" + spec.resource_dir.string() +
                  ") is not offered: " + why);
        refused_.emplace(name, std::move(why));
    }
    log_.info("found " + std::to_string(specs_.size()) + " kernelspec(s)" +
              (refused_.empty() ? "" : ", refused " + std::to_string(refused_.size())));
}

std::optional<kernelspec> kernelspec_catalog::find(std::string_view name) const {
    for (const auto& spec : specs_)
        if (spec.name == name) return spec;
    return std::nullopt;
}

std::optional<std::string> kernelspec_catalog::refusal(std::string_view name) const {
    const auto it = refused_.find(std::string(name));
    if (it == refused_.end()) return std::nullopt;
    return it->second;
}

std::string kernelspec_catalog::default_name() const {
    if (find("python3")) return "python3";
    return specs_.empty() ? std::string() : specs_.front().name;
}

}  // namespace callisto::launcher
