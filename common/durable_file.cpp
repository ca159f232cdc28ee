#include "common/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <string>
#include <system_error>

#include "common/unique_fd.hpp"

namespace callisto {

namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
    throw std::system_error(errno, std::generic_category(), what + " " + path.string());
}

void sync_directory(const std::filesystem::path& dir) {
    unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) fail("open", dir);
    if (::fsync(fd.get()) != 0) fail("fsync", dir);
}

}  // namespace

void write_file_durably(const std::filesystem::path& path, std::string_view content) {
    const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    const auto temporary = dir / ("." + path.filename().string() + ".tmp");
    try {
        unique_fd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
        if (fd.get() < 0) fail("create", temporary);
        for (std::size_t done = 0; done < content.size();) {
            const auto n = ::write(fd.get(), content.data() + done, content.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail("write", temporary);
            done += static_cast<std::size_t>(n);
        }
        if (::fsync(fd.get()) != 0) fail("fsync", temporary);
        if (::rename(temporary.c_str(), path.c_str()) != 0) fail("rename to", path);
    } catch (...) {
        ::unlink(temporary.c_str());
        throw;
    }
    sync_directory(dir);
}

void remove_file_durably(const std::filesystem::path& path) {
    if (::unlink(path.c_str()) != 0) {
        if (errno == ENOENT) return;
        fail("remove", path);
    }
    sync_directory(path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path());
}

}  // namespace callisto
