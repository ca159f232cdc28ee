#pragma once
// What a kernel process writes to its own stdout and stderr (not its cells' output, which
// ipykernel sends on iopub): start-up chatter such as the debugger's frozen-modules warning and
// the `--existing` hint, and what a kernel or the sandbox says when it fails to start. Read from
// a pipe on the kernel's strand and logged at debug, a line at a time and bounded, so it never
// interleaves with the gateway's own log lines (one JSON object per line with
// --log-format=json); the last lines are kept to explain a death at warn.

#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/streambuf.hpp>

#include "common/logger.hpp"
#include "common/unique_fd.hpp"

namespace callisto::gateway::kernels {

class kernel_output_log : public std::enable_shared_from_this<kernel_output_log> {
public:
    using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;

    // A pipe: the write end for the child (spawn_description::output_fd), the read end kept.
    // Throws std::system_error when no pipe can be had.
    kernel_output_log(strand_type strand, logger log);

    int child_end() const { return child_end_.get(); }
    // Once the child has its copy: closes ours (EOF comes when the child's last copy closes)
    // and starts reading.
    void start();
    // Stops reading; what is still in the pipe is dropped.
    void stop();

    // The last lines (at most tail_lines, each cut at max_line_bytes), oldest first.
    std::string tail() const;

    static constexpr std::size_t max_line_bytes = 2048;
    static constexpr std::size_t tail_lines = 20;
    // Lines logged per kernel before the rest are only counted: a kernel that writes to its
    // own stderr in a loop must not flood the gateway's log.
    static constexpr std::size_t max_logged_lines = 1000;

private:
    void read_more();
    void on_line(std::string line);

    logger log_;
    unique_fd child_end_;
    boost::asio::posix::stream_descriptor pipe_;
    boost::asio::streambuf buffer_;
    std::deque<std::string> tail_;
    std::size_t logged_ = 0;
    std::size_t unlogged_ = 0;
};

}  // namespace callisto::gateway::kernels
