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
#include <string_view>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>

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
    // Reads now what the pipe holds (on the strand): a process that has exited wrote all it
    // ever will, though its exit may be reported before the reads got to it.
    void drain();
    // Stops reading; what is still in the pipe is dropped.
    void stop();

    // The last lines (at most tail_lines, each cut at max_line_bytes), oldest first.
    std::string tail() const;
    // The last lines that fit in `max_bytes` (newlines included), oldest first; a last line
    // longer than that alone keeps its end, after "...". For an error answer.
    std::string last_words(std::size_t max_bytes) const;

    static constexpr std::size_t max_line_bytes = 2048;
    static constexpr std::size_t tail_lines = 20;
    // Lines logged per kernel before the rest are only counted: a kernel that writes to its
    // own stderr in a loop must not flood the gateway's log.
    static constexpr std::size_t max_logged_lines = 1000;

private:
    void wait_more();
    // Reads until the pipe is empty; false once every writer is gone (EOF) or on an error.
    bool read_available();
    void take(std::string_view bytes);
    void finish();  // the last line without a newline, and the count of those not logged
    void on_line(std::string line);

    logger log_;
    unique_fd child_end_;
    boost::asio::posix::stream_descriptor pipe_;
    std::string partial_;  // a line not yet ended, at most 4 * max_line_bytes
    bool ended_ = false;   // EOF, an error, or stopped
    bool finished_ = false;
    std::deque<std::string> tail_;
    std::size_t logged_ = 0;
    std::size_t unlogged_ = 0;
};

}  // namespace callisto::gateway::kernels
