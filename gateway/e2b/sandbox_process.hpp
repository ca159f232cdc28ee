#pragma once
// One E2B command running as its own process in a kernel's sandbox (launcher/sandbox_command
// starts it through callisto-enter): its output read as it comes, its pid in the sandbox and
// its end from callisto-enter's report pipe, its stdin, its signals. Listeners (a Start
// stream, and each Connect) get its events in order; output before the pid is known waits for
// it. Everything runs on the process's strand; signal() and write_stdin() are thread-safe.
// Dropping the last reference closes the control pipe: callisto-enter kills the command.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "common/unique_fd.hpp"
#include "gateway/e2b/process_rpc.hpp"
#include "launcher/sandbox/sandbox_command.hpp"

namespace callisto::gateway::e2b {

struct process_event {
    enum class kind { output, ended };
    kind type = kind::output;
    std::string stream;  // "stdout" | "stderr"
    std::string bytes;
    process_exit exit;  // ended
};

class sandbox_process : public std::enable_shared_from_this<sandbox_process> {
public:
    using listener = std::function<void(const process_event&)>;
    // The pid in the sandbox, or none and why the command could not start; the listener it
    // returns gets every event from then on.
    using start_fn = std::function<listener(std::optional<std::uint32_t> pid, std::string why)>;
    using ended_fn = std::function<void()>;

    sandbox_process(boost::asio::io_context& ioc, launcher::sandbox_command command,
                    process_start config);
    ~sandbox_process();

    // Starts reading. `on_ended` runs once, after the last event.
    void run(start_fn on_start, ended_fn on_ended);
    // Another listener, from its next event on (Connect); false if the process has ended.
    // Called from any thread; `on_attached` runs on the strand before any event reaches it.
    void attach(listener l, std::function<void(bool attached)> on_attached);

    // One of the two signals envd sends; false when the process is gone.
    bool signal(int sig);
    // The bytes, written at once (the pipe holds 64 KiB); false with why when they are not.
    bool write_stdin(std::string_view bytes, connect_code& code, std::string& why);
    bool close_stdin();

    std::uint32_t pid() const { return pid_; }  // 0 before the start
    const process_start& config() const { return config_; }

private:
    void read_output(boost::asio::posix::stream_descriptor& pipe, const char* stream);
    void read_report();
    void on_report_line(std::string_view line);
    void deliver(process_event event);
    void maybe_end();
    void reap();

    boost::asio::strand<boost::asio::io_context::executor_type> strand_;
    boost::asio::posix::stream_descriptor stdout_, stderr_, report_;
    boost::asio::steady_timer reap_timer_;
    const pid_t enter_pid_;
    const process_start config_;
    std::mutex input_mutex_;  // stdin_ and control_
    unique_fd stdin_;
    unique_fd control_;
    // The strand's:
    start_fn on_start_;
    ended_fn on_ended_;
    std::vector<listener> listeners_;
    std::vector<process_event> early_;  // output before the pid
    std::string report_buffer_;
    std::string enter_errors_;  // callisto-enter's stderr, when it fails before the pid
    std::optional<process_exit> exit_;
    int open_pipes_ = 3;
    bool started_ = false, ended_ = false;
    int reap_tries_ = 0;
    std::atomic<std::uint32_t> pid_{0};  // written once, on the strand
};

}  // namespace callisto::gateway::e2b
