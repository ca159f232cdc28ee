#pragma once
// runners/*.py, compiled in (cmake/embed_file.cmake generates the definitions at build time):
// the gateway hands them to kernels, so they must not depend on the source tree.

#include <string_view>

namespace callisto::gateway::languages {

std::string_view shell_runner_source();
std::string_view sql_runner_source();

}  // namespace callisto::gateway::languages
