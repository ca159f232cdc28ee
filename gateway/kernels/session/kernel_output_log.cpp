#include "gateway/kernels/session/kernel_output_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

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
    : log_(std::move(log)), pipe_(strand) {
    unique_fd read_end;
    child_end_ = open_pipe(read_end);
    pipe_.assign(read_end.release());
}

void kernel_output_log::start() {
    child_end_.reset();
    boost::system::error_code ignored;
    pipe_.non_blocking(true, ignored);
    wait_more();
}

void kernel_output_log::drain() {
    if (!ended_ && pipe_.is_open() && !read_available()) finish();
}

void kernel_output_log::stop() {
    ended_ = true;
    boost::system::error_code ignored;
    pipe_.close(ignored);
}

// Readiness, then plain reads of what is there: drain() may read on the strand between two
// waits, which an outstanding asynchronous read would not allow.
void kernel_output_log::wait_more() {
    pipe_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                     [self = shared_from_this()](boost::system::error_code ec) {
                         if (!ec && !self->ended_ && self->read_available())
                             return self->wait_more();
                         self->finish();
                     });
}

bool kernel_output_log::read_available() {
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(pipe_.native_handle(), buf, sizeof buf);
        if (n > 0) {
            take(std::string_view(buf, static_cast<std::size_t>(n)));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        ended_ = true;  // EOF: every copy of the write end is closed
        return false;
    }
}

void kernel_output_log::take(std::string_view bytes) {
    partial_.append(bytes);
    std::size_t start = 0;
    for (auto end = partial_.find('\n'); end != std::string::npos;
         end = partial_.find('\n', start)) {
        on_line(partial_.substr(start, end - start));
        start = end + 1;
    }
    partial_.erase(0, start);
    // A line that never ends is logged in pieces, so it cannot grow without a bound.
    while (partial_.size() >= 4 * max_line_bytes) {
        on_line(partial_.substr(0, 4 * max_line_bytes));
        partial_.erase(0, 4 * max_line_bytes);
    }
}

void kernel_output_log::finish() {
    if (finished_) return;
    finished_ = true;
    ended_ = true;
    // Whatever is left without a newline is the last line.
    if (!partial_.empty()) on_line(std::move(partial_));
    partial_.clear();
    if (unlogged_ > 0)
        log_.debug(std::to_string(unlogged_) + " more lines of kernel output were not logged");
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

std::string kernel_output_log::last_words(std::size_t max_bytes) const {
    std::string out;
    for (auto it = tail_.rbegin(); it != tail_.rend(); ++it) {
        const std::size_t need = it->size() + (out.empty() ? 0 : 1);
        if (out.size() + need > max_bytes) {
            if (out.empty() && max_bytes > 3)
                out = "..." + it->substr(it->size() - (max_bytes - 3));
            break;
        }
        out = out.empty() ? *it : *it + "\n" + out;
    }
    return out;
}

std::string kernel_output_log::tail() const {
    std::string out;
    for (const auto& line : tail_) out += (out.empty() ? "" : "\n") + line;
    return out;
}

}  // namespace callisto::gateway::kernels
