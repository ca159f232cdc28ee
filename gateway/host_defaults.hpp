#pragma once
// The defaults that depend on the host rather than on the flags: which kernelspec is the
// default one (the catalog's), and where the web UI is when --web-root names no directory.
// --print-config and the server both read them from here, so what one shows the other uses.

#include <filesystem>
#include <vector>

#include "gateway/server_config.hpp"

namespace callisto::gateway {

// Where kernelspecs are looked for: --kernel-dir entries, then the standard Jupyter paths.
std::vector<std::filesystem::path> kernel_search_path(const server_config& config);

// Where a web UI is looked for, in order, when --web-root names none. For a binary in
// `binary_dir`: an installed layout (<binary_dir>/../share/callisto/web), a directory beside it
// (<binary_dir>/web), the source tree's web/ when the binary is in its build tree (`build_dir`,
// `source_web`: compiled in), and the install prefix's share/callisto/web (`install_web`).
std::vector<std::filesystem::path> web_root_candidates(const std::filesystem::path& binary_dir,
                                                       const std::filesystem::path& build_dir,
                                                       const std::filesystem::path& source_web,
                                                       const std::filesystem::path& install_web);

// The candidates for this binary (/proc/self/exe) and the paths CMake compiled in.
std::vector<std::filesystem::path> web_root_candidates();

// The first candidate with an index.html; empty when none has one.
std::filesystem::path first_web_root(const std::vector<std::filesystem::path>& candidates);

// `config` with its web root found when --web-root named none (and is not off): empty still
// when none was found.
server_config with_web_root(server_config config);

// `config` with what it leaves to the host filled in: --default-kernel from the kernelspecs
// found (python3 when there is one) and the web root. What --print-config shows.
server_config with_host_defaults(server_config config);

}  // namespace callisto::gateway
