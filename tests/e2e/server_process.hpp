#pragma once
// Starts the callisto binary on a free loopback port for one test, and runs client programs
// against it.

#include <sys/types.h>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace callisto::e2e {

struct command_result {
    int exit_code = -1;  // -1 when killed by a signal or timed out
    bool timed_out = false;
    std::string output;  // stdout and stderr, interleaved
};

// Runs argv with extra environment variables, capturing output; kills it after timeout_s.
command_result run_command(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& extra_env, int timeout_s);

// A minimal HTTP/1.1 client for the runner's own checks. Returns the status (0 on failure).
int http_request(int port, const std::string& method, const std::string& target,
                 const std::string& token, const std::string& body = {},
                 std::string* response_body = nullptr);

class server_process {
public:
    // Each server gets its own --runtime-dir and, unless extra_args has one, --workdir-root:
    // an instance locks its workdir root, so servers of tests run side by side must not share.
    // `command_prefix` runs before the binary, e.g. {"/usr/bin/prlimit", "--nofile=256:256"};
    // it must exec the binary in its own process, so pid() stays the server's.
    explicit server_process(std::vector<std::string> extra_args = {},
                            std::vector<std::string> command_prefix = {});
    ~server_process();  // SIGKILL if still running

    int port() const { return port_; }
    const std::string& token() const { return token_; }
    // https:// when started with --certfile.
    std::string url() const {
        return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_);
    }
    const std::filesystem::path& runtime_dir() const { return runtime_dir_; }
    pid_t pid() const { return pid_; }
    std::string log() const;

    // SIGTERM, then wait; the exit code, -1 when it did not exit within timeout_s (its threads'
    // stacks are then in its log), or -2 when a process naming its runtime directory (an
    // orphaned kernel) outlived it.
    int stop(int timeout_s = 60);
    // SIGKILL, as a crash: nothing of the server's own cleanup runs; kernels outlive it.
    void crash();
    // Sends `sig` and waits: the exit code, -1 when it did not exit within timeout_s. No check
    // for processes left behind (SIGUSR2 leaves the kernels running on purpose).
    int exit_on(int sig, int timeout_s = 30);

private:
    void append_thread_stacks() const;

    pid_t pid_ = -1;
    int port_ = 0;
    bool tls_ = false;
    std::string token_;
    std::filesystem::path runtime_dir_;
    std::filesystem::path own_workdir_root_;  // when the test gave none: removed at the end
    std::filesystem::path log_file_;
};

// Processes whose command line mentions `needle` (kernels carry their connection file path).
std::vector<pid_t> processes_mentioning(const std::string& needle);
// Every process below `root` (children, theirs, ...), from /proc.
std::vector<pid_t> descendants_of(pid_t root);

}  // namespace callisto::e2e
