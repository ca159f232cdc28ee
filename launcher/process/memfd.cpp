#include "launcher/process/memfd.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace callisto::launcher {

unique_fd memfd_holding(const char* name, std::string_view bytes) {
    unique_fd fd(::memfd_create(name, MFD_CLOEXEC));
    if (!fd) throw std::system_error(errno, std::generic_category(), std::string("memfd ") + name);
    std::size_t done = 0;
    while (done < bytes.size()) {
        const auto n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw std::system_error(errno, std::generic_category(),
                                    std::string("writing memfd ") + name);
        done += static_cast<std::size_t>(n);
    }
    ::lseek(fd.get(), 0, SEEK_SET);
    return fd;
}

std::string memfd_contents(int fd, const char* what) {
    std::string text;
    char buffer[4096];
    for (off_t at = 0;;) {
        const auto n = ::pread(fd, buffer, sizeof buffer, at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw std::system_error(errno, std::generic_category(), std::string("reading ") + what);
        if (n == 0) return text;
        text.append(buffer, static_cast<std::size_t>(n));
        at += n;
    }
}

}  // namespace callisto::launcher
