#include "gateway/http/descriptor_body.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace callisto::gateway {

std::size_t read_file_chunk(int fd, std::uint64_t offset, char* into, std::size_t size,
                            boost::beast::error_code& ec) {
    ec = {};
    while (true) {
        const ssize_t n = ::pread(fd, into, size, static_cast<off_t>(offset));
        if (n > 0) return static_cast<std::size_t>(n);
        if (n < 0 && errno == EINTR) continue;
        ec = n < 0 ? boost::beast::error_code(errno, boost::system::system_category())
                   : boost::beast::error_code(EIO, boost::system::system_category());
        return 0;
    }
}

void descriptor_body::writer::init(boost::beast::error_code& ec) {
    ec = {};
    if (!body_.file && body_.size > 0)
        ec = boost::beast::error_code(EBADF, boost::system::system_category());
}

boost::optional<std::pair<descriptor_body::writer::const_buffers_type, bool>>
descriptor_body::writer::get(boost::beast::error_code& ec) {
    ec = {};
    if (offset_ >= body_.size) return boost::none;
    if (!chunk_) chunk_ = std::make_unique<char[]>(chunk_bytes);
    const auto want =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, body_.size - offset_));
    const std::size_t n = read_file_chunk(body_.file.get(), offset_, chunk_.get(), want, ec);
    if (ec) return boost::none;
    offset_ += n;
    return std::make_pair(const_buffers_type(chunk_.get(), n), offset_ < body_.size);
}

}  // namespace callisto::gateway
