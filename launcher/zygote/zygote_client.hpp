#pragma once
// The gateway's side of one running zygote (launcher/zygote/): starts the callisto-zygote
// process as a child of the process supervisor (so it dies with the gateway), sends it fork,
// signal and terminate orders, and reads its events on a thread of its own: each fork's pid or
// reason, each kernel's exit. When the zygote goes, every kernel it forked is reported
// killed (their jails die with it), except those forked to outlive the gateway: the supervisor
// adopts them. Then `on_gone` runs.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/logger.hpp"
#include "common/unique_fd.hpp"
#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/process/spawn_description.hpp"

namespace callisto::launcher {

struct zygote_settings {
    std::filesystem::path program;       // callisto-zygote
    std::filesystem::path python;        // the interpreter it embeds (kernelspecs must match)
    std::filesystem::path scratch_root;  // each zygote's empty jail mount point goes here
    std::chrono::milliseconds fork_timeout{15000};
};

class zygote_client {
public:
    using exit_handler = process_supervisor::exit_handler;

    // Starts the zygote for `spec` with these modules preloaded. Throws std::runtime_error
    // when it cannot be started. `on_gone(why)` runs once, on the client's thread.
    zygote_client(process_supervisor& supervisor, const zygote_settings& settings,
                  const kernelspec& spec, const std::vector<std::string>& preload, logger log,
                  std::function<void(const std::string&)> on_gone);
    // Closes the socket: the zygote kills what it forked and exits. Joins the reader, and
    // returns once the zygote is reaped (killed if it is still busy, say preloading): it
    // writes in the scratch root, which its owner removes next.
    ~zygote_client();
    zygote_client(const zygote_client&) = delete;
    zygote_client& operator=(const zygote_client&) = delete;

    bool ready() const { return ready_ && !gone_; }
    // Once ready: the pages each ipykernel fork faults in first (0 if the zygote could not
    // learn them; its ready event said why).
    std::uint64_t prefaulted_pages() const { return prefaulted_pages_; }
    pid_t pid() const { return pid_; }
    bool gone() const { return gone_; }

    // Forks the kernel `what` describes (what.zygote set); blocks until the zygote answers.
    // Throws std::runtime_error with the zygote's reason.
    pid_t fork(const spawn_description& what, exit_handler on_exit);

    // False when `pid` is not a live kernel of this zygote.
    bool signal(pid_t pid, int sig);
    bool terminate(pid_t pid, std::chrono::milliseconds grace);
    bool owns(pid_t pid) const;

private:
    struct pending_fork {
        exit_handler on_exit;
        std::promise<pid_t> result;
        bool outlives = false;
    };

    void read_events();
    void log_output();  // on the reader thread
    void send(const std::string& bytes);

    process_supervisor& supervisor_;
    logger log_;
    std::string spec_name_;
    std::chrono::milliseconds fork_timeout_;
    std::function<void(const std::string&)> on_gone_;
    unique_fd socket_;
    unique_fd output_;         // the zygote's stdout and stderr
    std::string output_line_;  // a line not yet ended
    pid_t pid_ = 0;
    std::atomic<bool> ready_{false};
    std::atomic<std::uint64_t> prefaulted_pages_{0};
    std::atomic<bool> gone_{false};
    mutable std::mutex mutex_;
    std::uint64_t next_id_ = 0;                      // guarded by mutex_
    std::map<std::uint64_t, pending_fork> pending_;  // guarded by mutex_
    std::map<pid_t, exit_handler> kernels_;          // guarded by mutex_
    std::set<pid_t> outliving_;  // kernels_ forked to outlive us, guarded by mutex_
    std::thread reader_;
    // Set by the supervisor when it reaps the zygote; shared, as that may outlive this.
    std::shared_ptr<std::promise<void>> exited_ = std::make_shared<std::promise<void>>();
    std::future<void> exited_future_ = exited_->get_future();
};

}  // namespace callisto::launcher
