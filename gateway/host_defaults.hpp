#pragma once
// The defaults that depend on the host rather than on the flags: which kernelspec is the
// default one (the catalog's), so that --print-config shows what a server would use.

#include <filesystem>
#include <vector>

#include "gateway/server_config.hpp"

namespace callisto::gateway {

// Where kernelspecs are looked for: --kernel-dir entries, then the standard Jupyter paths.
std::vector<std::filesystem::path> kernel_search_path(const server_config& config);

// `config` with what it leaves to the host filled in: --default-kernel from the kernelspecs
// found (python3 when there is one). What --print-config shows.
server_config with_host_defaults(server_config config);

}  // namespace callisto::gateway
