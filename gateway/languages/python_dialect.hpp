#pragma once
// The gateway's own requests to an ipykernel, in Python (see kernel_dialect.hpp). Each leaves
// no name in the user's namespace: one expression, or names prefixed _callisto_ and deleted.

#include <string>

#include "gateway/languages/kernel_dialect.hpp"

namespace callisto::gateway::languages::python_dialect {

std::string chdir_code(const std::string& path);
std::string home_code(const std::string& path);
// The saved values live on the sys module, out of the way of dir() and %who.
std::string env_apply_code(const env_vars& vars);
std::string env_restore_code();
// Keeps IPython's profile and the font caches (.ipython, .cache) when wiping: the workdir is
// the sandbox's HOME, and a kernelspec that configures a history file has it open there
// (deleting an open SQLite file makes every later cell print an error; Callisto's own kernels
// keep their history in memory). A new history session lets the execution count start at 1.
std::string reset_code(const std::string& workdir, bool wipe);

}  // namespace callisto::gateway::languages::python_dialect
