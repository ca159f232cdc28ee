#pragma once
// An exclusive flock on <dir>/.lock for a process's life: the kernel drops it however the
// process dies, so a second live process refusing to share the directory is all it does.
// The --state-dir's guard: two gateways adopting the same kernels would fight over them.

#include <filesystem>
#include <string>

#include "common/unique_fd.hpp"

namespace callisto {

class directory_lock {
public:
    // Creates the directory if needed. Throws std::runtime_error, naming `what` and the
    // directory, when another process holds the lock or it cannot be taken.
    directory_lock(const std::filesystem::path& dir, const std::string& what);

private:
    unique_fd fd_;
};

}  // namespace callisto
