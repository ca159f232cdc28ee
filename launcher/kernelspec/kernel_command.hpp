#pragma once
// Turns a kernelspec into a spawn_description: substitutes {connection_file} and
// {resource_dir} in argv, and builds a scrubbed environment (only a few safe host variables,
// then the kernelspec's env, then the caller's extras).

#include <filesystem>
#include <map>
#include <string>

#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/spawn_description.hpp"

namespace callisto::launcher {

spawn_description kernel_command(const kernelspec& spec,
                                 const std::filesystem::path& connection_file,
                                 const std::filesystem::path& cwd,
                                 const std::map<std::string, std::string>& extra_env = {});

}  // namespace callisto::launcher
