#pragma once
// Files served as they are: kernelspec resources (logos) and the web UI.

#include <filesystem>
#include <string>
#include <string_view>

#include "gateway/http/json_response.hpp"

namespace callisto::gateway {

std::string mime_type(const std::filesystem::path& file);

// Serves root/relative. Refuses anything that resolves outside root (".." or a symlink), is not
// a regular file, or is larger than max_bytes, with a JSON error.
http_response serve_file(const std::filesystem::path& root, const std::string& relative,
                         std::size_t max_bytes = 16u << 20);

}  // namespace callisto::gateway
