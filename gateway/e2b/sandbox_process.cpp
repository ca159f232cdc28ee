#include "gateway/e2b/sandbox_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

namespace callisto::gateway::e2b {

namespace {

constexpr std::size_t chunk = 64 * 1024;
// What callisto-enter may say on its stderr before the command runs (it fails there).
constexpr std::size_t enter_errors_cap = 4096;

}  // namespace

sandbox_process::sandbox_process(boost::asio::io_context& ioc, launcher::sandbox_command command,
                                 process_start config)
    : strand_(boost::asio::make_strand(ioc)),
      stdout_(strand_, command.stdout_fd.release()),
      stderr_(strand_, command.stderr_fd.release()),
      report_(strand_, command.report_fd.release()),
      reap_timer_(strand_),
      enter_pid_(command.pid),
      config_(std::move(config)),
      stdin_(std::move(command.stdin_fd)),
      control_(std::move(command.control_fd)) {}

sandbox_process::~sandbox_process() {
    // control_ closes here: callisto-enter kills what is left of the command. Its exit is
    // reaped by reap() while the process lives; if it never ran, nothing waits for it: once.
    if (!ended_) ::waitpid(enter_pid_, nullptr, WNOHANG);
}

void sandbox_process::run(start_fn on_start, ended_fn on_ended) {
    boost::asio::post(strand_, [self = shared_from_this(), on_start = std::move(on_start),
                                on_ended = std::move(on_ended)]() mutable {
        self->on_start_ = std::move(on_start);
        self->on_ended_ = std::move(on_ended);
        self->read_output(self->stdout_, "stdout");
        self->read_output(self->stderr_, "stderr");
        self->read_report();
    });
}

void sandbox_process::attach(listener l, std::function<void(bool)> on_attached) {
    boost::asio::post(strand_, [self = shared_from_this(), l = std::move(l),
                                on_attached = std::move(on_attached)]() mutable {
        if (self->ended_ || !self->started_) return on_attached(false);
        on_attached(true);
        self->listeners_.push_back(std::move(l));
    });
}

void sandbox_process::read_output(boost::asio::posix::stream_descriptor& pipe, const char* stream) {
    auto buffer = std::make_shared<std::string>(chunk, '\0');
    pipe.async_read_some(boost::asio::buffer(*buffer),
                         [self = shared_from_this(), &pipe, stream, buffer](
                             boost::system::error_code ec, std::size_t n) {
                             if (n > 0) {
                                 buffer->resize(n);
                                 process_event e;
                                 e.stream = stream;
                                 e.bytes = std::move(*buffer);
                                 self->deliver(std::move(e));
                             }
                             if (ec) {
                                 --self->open_pipes_;
                                 return self->maybe_end();
                             }
                             self->read_output(pipe, stream);
                         });
}

void sandbox_process::read_report() {
    auto buffer = std::make_shared<std::array<char, 256>>();
    report_.async_read_some(
        boost::asio::buffer(*buffer),
        [self = shared_from_this(), buffer](boost::system::error_code ec, std::size_t n) {
            self->report_buffer_.append(buffer->data(), n);
            for (auto nl = self->report_buffer_.find('\n'); nl != std::string::npos;
                 nl = self->report_buffer_.find('\n')) {
                const std::string line = self->report_buffer_.substr(0, nl);
                self->report_buffer_.erase(0, nl + 1);
                self->on_report_line(line);
            }
            if (ec || self->report_buffer_.size() > 1024) {
                // callisto-enter has exited (or says nonsense): its status is known or never.
                --self->open_pipes_;
                if (!self->exit_) self->exit_ = exit_of_report("");
                if (!self->started_ && self->on_start_) {
                    std::string why = self->enter_errors_.empty()
                                          ? "the command could not be started in the sandbox"
                                          : self->enter_errors_;
                    while (!why.empty() && why.back() == '\n') why.pop_back();
                    auto start = std::move(self->on_start_);
                    start(std::nullopt, why);
                }
                self->reap();
                return self->maybe_end();
            }
            self->read_report();
        });
}

void sandbox_process::on_report_line(std::string_view line) {
    if (!started_ && line.starts_with("pid ")) {
        std::uint32_t pid = 0;
        const auto digits = line.substr(4);
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
        if (ec != std::errc{} || pid == 0) return;
        pid_ = pid;
        started_ = true;
        auto start = std::move(on_start_);
        if (start)
            if (auto l = start(pid, {})) listeners_.push_back(std::move(l));
        auto early = std::move(early_);
        for (auto& e : early) deliver(std::move(e));
        return;
    }
    if (started_ && !exit_) exit_ = exit_of_report(line);
}

void sandbox_process::deliver(process_event event) {
    if (!started_) {
        // Before the pid: the command's first output, or callisto-enter's reason for failing.
        if (event.stream == "stderr" && enter_errors_.size() < enter_errors_cap)
            enter_errors_ += event.bytes.substr(0, enter_errors_cap - enter_errors_.size());
        early_.push_back(std::move(event));
        return;
    }
    for (const auto& l : listeners_) l(event);
}

void sandbox_process::maybe_end() {
    if (open_pipes_ > 0 || ended_) return;
    ended_ = true;
    if (started_) {
        process_event e;
        e.type = process_event::kind::ended;
        e.exit = exit_.value_or(exit_of_report(""));
        for (const auto& l : listeners_) l(e);
    }
    listeners_.clear();
    if (on_ended_) std::exchange(on_ended_, nullptr)();
}

void sandbox_process::reap() {
    // callisto-enter closed its report pipe as it exited: a zombie in a moment, or already.
    const pid_t r = ::waitpid(enter_pid_, nullptr, WNOHANG);
    if (r != 0 || ++reap_tries_ > 600) return;
    reap_timer_.expires_after(std::chrono::milliseconds(reap_tries_ < 10 ? 10 : 100));
    reap_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->reap();
    });
}

bool sandbox_process::signal(int sig) {
    std::lock_guard lock(input_mutex_);
    if (!control_) return false;
    const unsigned char byte = static_cast<unsigned char>(sig);
    // EPIPE: callisto-enter is gone, and with it the command.
    return ::write(control_.get(), &byte, 1) == 1;
}

bool sandbox_process::write_stdin(std::string_view bytes, connect_code& code, std::string& why) {
    std::lock_guard lock(input_mutex_);
    if (!stdin_) {
        code = connect_code::failed_precondition;
        why = "the process's stdin is not open: start it with stdin true";
        return false;
    }
    while (!bytes.empty()) {
        const ssize_t n = ::write(stdin_.get(), bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            code = connect_code::resource_exhausted;
            why = "the process is not reading its stdin (its pipe is full)";
            return false;
        }
        if (n < 0) {
            code = connect_code::failed_precondition;
            why = "the process's stdin is closed";
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool sandbox_process::close_stdin() {
    std::lock_guard lock(input_mutex_);
    if (!stdin_) return false;
    stdin_.reset();
    return true;
}

}  // namespace callisto::gateway::e2b
