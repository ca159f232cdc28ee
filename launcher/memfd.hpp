#pragma once
// A memfd holding some bytes, for handing data to another process by descriptor: bwrap reads
// the seccomp program from one, a zygote's fork its environment.

#include <string_view>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

// A fresh CLOEXEC memfd with `bytes` written and the offset back at 0. Throws
// std::system_error naming `name`.
unique_fd memfd_holding(const char* name, std::string_view bytes);

}  // namespace callisto::launcher
