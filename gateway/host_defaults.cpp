#include "gateway/host_defaults.hpp"

#include "launcher/kernelspec_catalog.hpp"

namespace callisto::gateway {

std::vector<std::filesystem::path> kernel_search_path(const server_config& config) {
    std::vector<std::filesystem::path> dirs = config.kernel_dirs;
    for (auto& d : launcher::kernelspec_catalog::default_search_path()) dirs.push_back(d);
    return dirs;
}

server_config with_host_defaults(server_config config) {
    if (config.default_kernel.empty())
        config.default_kernel =
            launcher::kernelspec_catalog(kernel_search_path(config)).default_name();
    return config;
}

}  // namespace callisto::gateway
