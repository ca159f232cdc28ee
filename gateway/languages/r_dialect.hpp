#pragma once
// The gateway's own requests to an IRkernel, in R (see kernel_dialect.hpp). Each runs in
// local() and returns invisibly: nothing is left in the global environment, nothing is shown.
// Every function is named with its package (base::rm, not rm): local()'s enclosure is the
// global environment, where the user's code may have defined an rm or a setwd of its own.

#include <string>

#include "gateway/languages/kernel_dialect.hpp"

namespace callisto::gateway::languages::r_dialect {

std::string chdir_code(const std::string& path);
std::string home_code(const std::string& path);
// The saved values live in options(), out of the way of ls().
std::string env_apply_code(const env_vars& vars);
std::string env_restore_code();
// IRkernel has no history session to renew: the execution count goes on.
std::string reset_code(const std::string& workdir, bool wipe);

}  // namespace callisto::gateway::languages::r_dialect
