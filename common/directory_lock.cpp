#include "common/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace callisto {

directory_lock::directory_lock(const std::filesystem::path& dir, const std::string& what) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const auto file = dir / ".lock";
    fd_.reset(::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd_.get() < 0)
        throw std::runtime_error(what + " " + dir.string() + ": " + std::strerror(errno));
    if (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0)
        throw std::runtime_error(
            errno == EWOULDBLOCK ? "another callisto instance uses " + what + " " + dir.string()
                                 : what + " " + dir.string() + ": flock: " + std::strerror(errno));
}

}  // namespace callisto
