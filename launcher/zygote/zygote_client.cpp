#include "launcher/zygote/zygote_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "launcher/process/memfd.hpp"
#include "launcher/zygote/seqpacket.hpp"
#include "launcher/zygote/zygote_protocol.hpp"

namespace callisto::launcher {

namespace proto = zygote_protocol;

namespace {

exit_status from_wait_status(int w) {
    exit_status s;
    if (WIFEXITED(w)) {
        s.exit_code = WEXITSTATUS(w);
    } else if (WIFSIGNALED(w)) {
        s.signal = WTERMSIG(w);
        s.core_dumped = WCOREDUMP(w);
    }
    return s;
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
    return out;
}

// An empty, root-only directory: each jail mounts its own root there, in its own namespace.
std::filesystem::path make_scratch(const std::filesystem::path& root, const std::string& name) {
    const auto dir = root / ("zygote-" + name);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        throw std::system_error(errno, std::generic_category(), "mkdir " + dir.string());
    return dir;
}

}  // namespace

zygote_client::zygote_client(process_supervisor& supervisor, const zygote_settings& settings,
                             const kernelspec& spec, const std::vector<std::string>& preload,
                             logger log, std::function<void(const std::string&)> on_gone)
    : supervisor_(supervisor),
      log_(std::move(log)),
      spec_name_(spec.name),
      fork_timeout_(settings.fork_timeout),
      on_gone_(std::move(on_gone)) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        throw std::system_error(errno, std::generic_category(), "zygote: socketpair");
    socket_.reset(pair[0]);
    unique_fd theirs(pair[1]);

    spawn_description what;
    what.argv = {settings.program.string(), "--control-fd=" + std::to_string(theirs.get()),
                 "--scratch=" + make_scratch(settings.scratch_root, spec.name).string(),
                 "--python=" + settings.python.string(), "--preload=" + joined(preload)};
    // Only what Python's start-up reads: each kernel gets its own environment after the fork.
    for (const char* name : {"PATH", "LANG", "LC_ALL", "TZ"})
        if (const char* value = std::getenv(name)) what.env[name] = value;
    const auto home = settings.scratch_root / ("zygote-" + spec.name + "-home");
    ::mkdir(home.c_str(), 0700);
    what.env["HOME"] = home.string();
    what.env["MPLCONFIGDIR"] = home.string();  // matplotlib's font cache, built once here
    what.inherit_fds = {theirs.get()};
    // Its own output (Python's warnings at import, a traceback) goes to the log, a line at a
    // time, never raw onto the gateway's stderr (which may be a JSON log).
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "zygote: pipe");
    output_.reset(out[0]);
    unique_fd output_write(out[1]);
    what.output_fd = output_write.get();
    what.env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1";  // debugpy's frozen-modules warning
    pid_ = supervisor.spawn(what,
                            [exited = exited_, log = log_, name = spec.name](pid_t, exit_status s) {
                                log.info("zygote for " + name + " " + s.describe());
                                exited->set_value();
                            });
    log_.info("zygote for " + spec.name + " started, pid " + std::to_string(pid_) +
              ", preloading " + (preload.empty() ? "nothing" : joined(preload)));
    reader_ = std::thread([this] { read_events(); });
}

zygote_client::~zygote_client() {
    ::shutdown(socket_.get(), SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    // An idle zygote exits on the closed socket at once; one still preloading reads it only
    // when done, seconds later. Its kernels die with it (PR_SET_PDEATHSIG), but for those
    // forked to outlive the gateway.
    using namespace std::chrono_literals;
    if (exited_future_.wait_for(2s) == std::future_status::ready) return;
    supervisor_.terminate(pid_, std::chrono::milliseconds(0));  // a no-op once it is reaped
    if (exited_future_.wait_for(10s) != std::future_status::ready)
        log_.warn("zygote for " + spec_name_ + " (pid " + std::to_string(pid_) +
                  ") not reaped 10 s after SIGKILL");
}

pid_t zygote_client::fork(const spawn_description& what, exit_handler on_exit) {
    std::future<pid_t> answer;
    std::uint64_t id;
    {
        std::lock_guard lock(mutex_);
        if (!ready()) throw std::runtime_error("the zygote is not ready");
        id = ++next_id_;
        auto& pending = pending_[id];
        pending.on_exit = std::move(on_exit);
        pending.outlives = what.outlive_gateway;
        answer = pending.result.get_future();
        // Sent under the lock: ids and messages stay in one order.
        // Handed on unread by the zygote: only the fork reads it.
        const unique_fd env =
            memfd_holding("callisto-kernel-env", proto::encode_environment(what.env));
        std::vector<int> fds{env.get()};
        if (what.output_fd >= 0) fds.push_back(what.output_fd);
        if (!send_seqpacket(socket_.get(), proto::encode_fork(id, what), fds)) {
            const int err = errno;
            pending_.erase(id);
            throw std::system_error(err, std::generic_category(), "zygote: send");
        }
    }
    if (answer.wait_for(fork_timeout_) != std::future_status::ready) {
        std::lock_guard lock(mutex_);
        pending_.erase(id);  // a late "forked" is killed by the reader
        throw std::runtime_error("the zygote did not answer within " +
                                 std::to_string(fork_timeout_.count()) + " ms");
    }
    return answer.get();
}

bool zygote_client::owns(pid_t pid) const {
    std::lock_guard lock(mutex_);
    return kernels_.contains(pid);
}

bool zygote_client::signal(pid_t pid, int sig) {
    if (!owns(pid)) return false;
    send(proto::encode(proto::signal_order{pid, sig}));
    return true;
}

bool zygote_client::terminate(pid_t pid, std::chrono::milliseconds grace) {
    if (!owns(pid)) return false;
    send(proto::encode(
        proto::terminate_order{pid, static_cast<std::uint64_t>(std::max<long>(0, grace.count()))}));
    return true;
}

void zygote_client::send(const std::string& bytes) {
    std::lock_guard lock(mutex_);
    if (!send_seqpacket(socket_.get(), bytes))
        log_.warn("zygote for " + spec_name_ + ": send: " + std::strerror(errno));
}

void zygote_client::log_output() {
    char buffer[4096];
    const auto n = ::read(output_.get(), buffer, sizeof buffer);
    if (n <= 0) {
        output_.reset();
        return;
    }
    output_line_.append(buffer, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (auto end = output_line_.find('\n'); end != std::string::npos;
         end = output_line_.find('\n', start)) {
        log_.info("zygote for " + spec_name_ + ": " + output_line_.substr(start, end - start));
        start = end + 1;
    }
    output_line_.erase(0, start);
    if (output_line_.size() > 2048) {  // a line without end: logged in pieces
        log_.info("zygote for " + spec_name_ + ": " + output_line_);
        output_line_.clear();
    }
}

void zygote_client::read_events() {
    std::string why = "its socket closed";
    for (;;) {
        pollfd fds[] = {{socket_.get(), POLLIN, 0}, {output_.get(), POLLIN, 0}};
        if (::poll(fds, output_ ? 2 : 1, -1) < 0) {
            if (errno == EINTR) continue;
            why = std::string("poll: ") + std::strerror(errno);
            break;
        }
        if (output_ && fds[1].revents) log_output();
        if (!fds[0].revents) continue;
        std::optional<seqpacket_message> message;
        try {
            message = receive_seqpacket(socket_.get());
        } catch (const std::system_error& e) {
            why = e.what();
            break;
        }
        if (!message) break;
        proto::event event;
        try {
            event = proto::decode_event(message->bytes);
        } catch (const std::invalid_argument& e) {
            log_.warn("zygote for " + spec_name_ + ": " + e.what());
            continue;
        }
        if (auto* ready = std::get_if<proto::ready_event>(&event)) {
            std::string failed;
            for (const auto& [module, reason] : ready->failed)
                failed += "; " + module + " did not load: " + reason;
            log_.info("zygote for " + spec_name_ + " ready (Python " + ready->python + ", " +
                      std::to_string(ready->preloaded.size()) + " modules in " +
                      std::to_string(ready->seconds).substr(0, 4) + " s, " +
                      std::to_string(ready->prefaulted_pages) + " pages faulted in per fork)" +
                      failed);
            prefaulted_pages_ = ready->prefaulted_pages;
            ready_ = true;
        } else if (auto* forked = std::get_if<proto::forked_event>(&event)) {
            std::lock_guard lock(mutex_);
            auto it = pending_.find(forked->id);
            if (it == pending_.end()) {  // its caller gave up waiting
                send_seqpacket(socket_.get(),
                               proto::encode(proto::signal_order{forked->pid, SIGKILL}));
                kernels_[forked->pid] = [](pid_t, exit_status) {};
                continue;
            }
            kernels_[forked->pid] = std::move(it->second.on_exit);
            if (it->second.outlives) outliving_.insert(forked->pid);
            it->second.result.set_value(forked->pid);
            pending_.erase(it);
        } else if (auto* failed = std::get_if<proto::fork_failed_event>(&event)) {
            std::lock_guard lock(mutex_);
            auto it = pending_.find(failed->id);
            if (it == pending_.end()) continue;
            it->second.result.set_exception(
                std::make_exception_ptr(std::runtime_error(failed->error)));
            pending_.erase(it);
        } else if (auto* exited = std::get_if<proto::exited_event>(&event)) {
            exit_handler handler;
            {
                std::lock_guard lock(mutex_);
                auto it = kernels_.find(exited->pid);
                if (it == kernels_.end()) continue;
                handler = std::move(it->second);
                kernels_.erase(it);
                outliving_.erase(exited->pid);
            }
            if (handler) handler(exited->pid, from_wait_status(exited->status));
        }
    }

    // What it wrote last (a traceback) says why it went.
    for (pollfd p{output_.get(), POLLIN, 0}; output_ && ::poll(&p, 1, 100) > 0;) log_output();

    // The zygote has gone, and every jail it forked with it (their death signal).
    gone_ = true;
    std::map<pid_t, exit_handler> orphans;
    std::set<pid_t> outliving;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, pending] : pending_)
            pending.result.set_exception(
                std::make_exception_ptr(std::runtime_error("the zygote exited")));
        pending_.clear();
        orphans.swap(kernels_);
        outliving.swap(outliving_);
    }
    for (auto& [pid, handler] : orphans) {
        if (outliving.contains(pid) && supervisor_.adopt(pid, handler)) continue;
        exit_status status;
        status.signal = SIGKILL;
        status.verdict = "killed: the zygote it was forked from exited";
        if (handler) handler(pid, status);
    }
    if (on_gone_) on_gone_(why);
}

}  // namespace callisto::launcher
