#pragma once
// A fuzz input as a file, for readers that take a path: a memfd, reached as /proc/self/fd/N.

#include <sys/mman.h>
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <string>

namespace callisto::fuzz {

class input_file {
public:
    input_file(const std::uint8_t* data, std::size_t size)
        : fd_(::memfd_create("fuzz-input", MFD_CLOEXEC)) {
        if (fd_ >= 0 && ::write(fd_, data, size) != static_cast<ssize_t>(size)) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~input_file() {
        if (fd_ >= 0) ::close(fd_);
    }
    input_file(const input_file&) = delete;
    input_file& operator=(const input_file&) = delete;

    bool ok() const { return fd_ >= 0; }
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
    int fd_;
};

}  // namespace callisto::fuzz
