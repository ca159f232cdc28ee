#pragma once
// A memfd holding some bytes, for handing data to another process by descriptor: bwrap reads
// the seccomp program from one, a zygote's fork its environment.

#include <string>
#include <string_view>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

// A fresh CLOEXEC memfd with `bytes` written and the offset back at 0. Throws
// std::system_error naming `name`.
unique_fd memfd_holding(const char* name, std::string_view bytes);

// All a memfd holds, read from its start whatever its offset (the descriptor may be shared
// with another process). Throws std::system_error naming `what`.
std::string memfd_contents(int fd, const char* what);

}  // namespace callisto::launcher
