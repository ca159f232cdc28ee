#pragma once
// A response body read from a file already open, a chunk at a time as the connection takes
// it: the gateway holds one chunk per download, not the file, however slowly the client reads.
// The handler opens the file (workdir files: with their path checks, never following a link)
// and hands over the descriptor; the body never opens anything by name.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional/optional.hpp>

#include "common/unique_fd.hpp"

namespace callisto::gateway {

// Reads up to `size` bytes at `offset` into `into`, retrying on EINTR: the bytes read, or 0
// with `ec` set (the file ended before `size`: it shrank since its size was taken).
std::size_t read_file_chunk(int fd, std::uint64_t offset, char* into, std::size_t size,
                            boost::beast::error_code& ec);

struct descriptor_body {
    // What one download holds in the gateway while it is sent (and counts against
    // --max-body-in-flight): large enough that a fast client is not held up by system calls.
    static constexpr std::size_t chunk_bytes = 64 * 1024;

    struct value_type {
        unique_fd file;
        std::uint64_t size = 0;  // what Content-Length says: the file is read up to here
    };

    static std::uint64_t size(const value_type& body) { return body.size; }

    class writer {
    public:
        using const_buffers_type = boost::asio::const_buffer;

        template <bool is_request, class Fields>
        writer(const boost::beast::http::header<is_request, Fields>&, const value_type& body)
            : body_(body) {}

        void init(boost::beast::error_code& ec);
        // The next chunk, and whether more follow; none once `size` bytes were given. A file
        // that shrank meanwhile is an error: the client must not take a short body for the file.
        boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& ec);

    private:
        const value_type& body_;
        std::unique_ptr<char[]> chunk_;  // allocated on the first read: a refused answer holds none
        std::uint64_t offset_ = 0;
    };
};

}  // namespace callisto::gateway
