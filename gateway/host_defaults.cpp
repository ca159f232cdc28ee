#include "gateway/host_defaults.hpp"

#include <algorithm>
#include <system_error>

#include "launcher/kernelspec/kernelspec_catalog.hpp"

namespace callisto::gateway {

namespace fs = std::filesystem;

std::vector<fs::path> kernel_search_path(const server_config& config) {
    std::vector<fs::path> dirs = config.kernel_dirs;
    for (auto& d : launcher::kernelspec_catalog::default_search_path()) dirs.push_back(d);
    return dirs;
}

std::vector<fs::path> web_root_candidates(const fs::path& binary_dir, const fs::path& build_dir,
                                          const fs::path& source_web, const fs::path& install_web) {
    std::vector<fs::path> out;
    auto add = [&out](fs::path dir) {
        dir = dir.lexically_normal();
        if (!dir.empty() && std::find(out.begin(), out.end(), dir) == out.end())
            out.push_back(std::move(dir));
    };
    if (!binary_dir.empty()) {
        add(binary_dir / ".." / "share" / "callisto" / "web");
        add(binary_dir / "web");
    }
    // Only a binary of this build tree serves its sources: an installed copy must not pick up
    // a checkout that happens to sit at the path it was built from.
    const auto within = [](const fs::path& dir, const fs::path& root) {
        const auto d = dir.lexically_normal(), r = root.lexically_normal();
        auto [r_end, _] = std::mismatch(r.begin(), r.end(), d.begin(), d.end());
        return !r.empty() && r_end == r.end();
    };
    if (!binary_dir.empty() && !build_dir.empty() && !source_web.empty() &&
        within(binary_dir, build_dir))
        add(source_web);
    if (!install_web.empty()) add(install_web);
    return out;
}

std::vector<fs::path> web_root_candidates() {
    std::error_code ec;
    const auto binary = fs::read_symlink("/proc/self/exe", ec);
    return web_root_candidates(ec ? fs::path() : binary.parent_path(), CALLISTO_BUILD_DIR,
                               CALLISTO_SOURCE_WEB, CALLISTO_INSTALL_WEB);
}

fs::path first_web_root(const std::vector<fs::path>& candidates) {
    for (const auto& dir : candidates) {
        std::error_code ec;
        if (fs::is_regular_file(dir / "index.html", ec)) return dir;
    }
    return {};
}

server_config with_web_root(server_config config) {
    if (config.web_root.empty() && !config.web_root_off)
        config.web_root = first_web_root(web_root_candidates());
    return config;
}

server_config with_host_defaults(server_config config) {
    if (config.kernels.default_kernel.empty())
        config.kernels.default_kernel =
            launcher::kernelspec_catalog(kernel_search_path(config)).default_name();
    return with_web_root(std::move(config));
}

}  // namespace callisto::gateway
