#include "gateway/kernels/kernel_output_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <istream>
#include <system_error>

#include <boost/asio/buffers_iterator.hpp>
#include <boost/asio/read_until.hpp>

namespace callisto::gateway::kernels {

namespace {
unique_fd open_pipe(unique_fd& read_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "kernel output pipe");
    read_end.reset(fds[0]);
    return unique_fd(fds[1]);
}
}  // namespace

kernel_output_log::kernel_output_log(strand_type strand, logger log)
    : log_(std::move(log)), pipe_(strand), buffer_(4 * max_line_bytes) {
    unique_fd read_end;
    child_end_ = open_pipe(read_end);
    pipe_.assign(read_end.release());
}

void kernel_output_log::start() {
    child_end_.reset();
    read_more();
}

void kernel_output_log::stop() {
    boost::system::error_code ignored;
    pipe_.close(ignored);
}

void kernel_output_log::read_more() {
    // The buffer's limit bounds a line that never ends; such a line is logged in pieces.
    boost::asio::async_read_until(
        pipe_, buffer_, '\n',
        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
            if (ec == boost::asio::error::not_found || (!ec && n > 0)) {
                const std::size_t take = ec ? self->buffer_.size() : n;
                std::string line(boost::asio::buffers_begin(self->buffer_.data()),
                                 boost::asio::buffers_begin(self->buffer_.data()) +
                                     static_cast<std::ptrdiff_t>(take));
                self->buffer_.consume(take);
                self->on_line(std::move(line));
                return self->read_more();
            }
            // EOF or closed: whatever is left without a newline is the last line.
            if (self->buffer_.size() > 0) {
                std::string rest(boost::asio::buffers_begin(self->buffer_.data()),
                                 boost::asio::buffers_end(self->buffer_.data()));
                self->buffer_.consume(self->buffer_.size());
                self->on_line(std::move(rest));
            }
            if (self->unlogged_ > 0)
                self->log_.debug(std::to_string(self->unlogged_) +
                                 " more lines of kernel output were not logged");
        });
}

void kernel_output_log::on_line(std::string line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.size() > max_line_bytes) line.resize(max_line_bytes);
    if (line.empty()) return;
    tail_.push_back(line);
    if (tail_.size() > tail_lines) tail_.pop_front();
    if (logged_ < max_logged_lines) {
        ++logged_;
        log_.debug("kernel output: " + line);
    } else {
        ++unlogged_;
    }
}

std::string kernel_output_log::tail() const {
    std::string out;
    for (const auto& line : tail_) out += (out.empty() ? "" : "\n") + line;
    return out;
}

}  // namespace callisto::gateway::kernels
