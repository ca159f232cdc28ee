#include "server_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace callisto::e2e {

namespace fs = std::filesystem;
using namespace std::chrono;

namespace {

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
    std::vector<char*> out;
    for (auto& s : v) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

std::vector<std::string> environment_with(const std::map<std::string, std::string>& extra) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
        std::string entry(*e);
        if (auto eq = entry.find('='); eq != std::string::npos)
            env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    for (auto& [k, v] : extra) env[k] = v;
    std::vector<std::string> out;
    for (auto& [k, v] : env) out.push_back(k + "=" + v);
    return out;
}

// fork/exec with stdout+stderr to `out_fd`.
pid_t spawn(std::vector<std::string> argv, const std::map<std::string, std::string>& extra_env,
            int out_fd) {
    auto env = environment_with(extra_env);
    auto cargv = c_strings(argv);
    auto cenv = c_strings(env);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        int devnull = ::open("/dev/null", O_RDONLY);
        ::dup2(devnull, 0);
        ::dup2(out_fd, 1);
        ::dup2(out_fd, 2);
        ::execve(cargv[0], cargv.data(), cenv.data());
        ::_exit(127);
    }
    return pid;
}

bool wait_exit(pid_t pid, int timeout_s, int& status) {
    auto deadline = steady_clock::now() + seconds(timeout_s);
    while (steady_clock::now() < deadline) {
        pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) return true;
        std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
}

}  // namespace

command_result run_command(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& extra_env, int timeout_s) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_t pid = spawn(argv, extra_env, pipe_fds[1]);
    ::close(pipe_fds[1]);
    command_result result;
    auto deadline = steady_clock::now() + seconds(timeout_s);
    char buf[65536];
    for (;;) {
        auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
        if (left <= 0) {
            result.timed_out = true;
            ::kill(-pid, SIGKILL);
            break;
        }
        pollfd p{pipe_fds[0], POLLIN, 0};
        int n = ::poll(&p, 1, static_cast<int>(std::min<long>(left, 1000)));
        if (n <= 0) continue;
        ssize_t got = ::read(pipe_fds[0], buf, sizeof buf);
        if (got <= 0) break;
        result.output.append(buf, static_cast<std::size_t>(got));
    }
    ::close(pipe_fds[0]);
    int status = 0;
    if (!wait_exit(pid, result.timed_out ? 10 : timeout_s, status)) {
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, &status, 0);
    }
    ::kill(-pid, SIGKILL);  // anything the client left behind in its group
    if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    return result;
}

int http_request(int port, const std::string& method, const std::string& target,
                 const std::string& token, const std::string& body, std::string* response_body) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{120, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return 0;
    }
    std::ostringstream req;
    req << method << " " << target << " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    if (!token.empty()) req << "Authorization: token " << token << "\r\n";
    req << "Content-Type: application/json\r\nContent-Length: " << body.size() << "\r\n\r\n"
        << body;
    std::string out = req.str();
    if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
        ::close(fd);
        return 0;
    }
    std::string response;
    char buf[8192];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
        response.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    if (response.size() < 12) return 0;
    if (response_body) {
        auto end = response.find("\r\n\r\n");
        *response_body = end == std::string::npos ? "" : response.substr(end + 4);
    }
    return std::atoi(response.substr(9, 3).c_str());
}

server_process::server_process(std::vector<std::string> extra_args,
                               std::vector<std::string> command_prefix) {
    port_ = free_port();
    token_ = "e2e-token-" + std::to_string(::getpid()) + "-" + std::to_string(port_);
    runtime_dir_ = "/tmp/cle2e-" + std::to_string(port_);
    log_file_ = fs::temp_directory_path() / ("callisto-e2e-" + std::to_string(port_) + ".log");
    std::vector<std::string> argv = {CALLISTO_BINARY, "--ip=127.0.0.1",
                                     "--port=" + std::to_string(port_), "--token=" + token_,
                                     "--runtime-dir=" + runtime_dir_.string()};
    const bool has_workdir_root =
        std::any_of(extra_args.begin(), extra_args.end(),
                    [](const std::string& a) { return a.rfind("--workdir-root=", 0) == 0; });
    if (!has_workdir_root) {
        own_workdir_root_ = "/tmp/cle2e-" + std::to_string(port_) + "-work";
        argv.push_back("--workdir-root=" + own_workdir_root_.string());
    }
    // Load shedding refuses new kernels while the host is saturated: a CI machine busy with the
    // suite's own bombs and load runs must not fail an unrelated case with a 503. The cases that
    // test shedding set its options themselves.
    const bool sets_shedding =
        std::any_of(extra_args.begin(), extra_args.end(),
                    [](const std::string& a) { return a.rfind("--shed-", 0) == 0; });
    if (!sets_shedding) argv.push_back("--shed-load=off");
    for (auto& a : extra_args) {
        argv.push_back(a);
        if (a.rfind("--certfile=", 0) == 0) tls_ = true;
    }
    argv.insert(argv.begin(), command_prefix.begin(), command_prefix.end());
    int fd = ::open(log_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = spawn(argv, {}, fd);
    ::close(fd);
    auto deadline = steady_clock::now() + seconds(30);
    while (steady_clock::now() < deadline) {
        // Over TLS, plain HTTP is answered 400 ("use https://"): the server is up.
        if (http_request(port_, "GET", "/api", "") == (tls_ ? 400 : 200)) return;
        int status;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("callisto exited at start:\n" + log());
        }
        std::this_thread::sleep_for(milliseconds(50));
    }
    throw std::runtime_error("callisto did not answer GET /api within 30 s:\n" + log());
}

server_process::~server_process() {
    // Kernels outlive a killed gateway (--state-dir) for the next start to adopt; a test that
    // did not stop its server (it failed) leaves none behind for the tests after it.
    const bool abandoned = pid_ > 0;
    crash();
    if (abandoned)
        for (pid_t orphan : processes_mentioning(runtime_dir_.string() + "/"))
            ::kill(orphan, SIGKILL);
    if (!own_workdir_root_.empty()) {
        // After a clean stop only the lock's files are left; after a kill, detach what is
        // still mounted there before removing anything.
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(own_workdir_root_, ec))
            ::umount2(entry.path().c_str(), MNT_DETACH);
        fs::remove_all(own_workdir_root_, ec);
    }
}

int server_process::exit_on(int sig, int timeout_s) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    if (!wait_exit(pid_, timeout_s, status)) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void server_process::crash() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
}

// A server that did not stop: what each of its threads waits on goes to its log, which the
// failing case prints, so a rare hang can be diagnosed from one CI run. A stop waits for its
// kernels' exits, which a zygote reports for those it forked: so the processes below the
// server too (their state and where the kernel has them wait), and each zygote's threads.
void server_process::append_thread_stacks() const {
    const std::string log = " >> " + log_file_.string() + " 2>&1";
    auto run = [](const std::string& command) {
        [[maybe_unused]] const int ignored = std::system(command.c_str());
    };
    std::ofstream(log_file_, std::ios::app) << "\n--- server_process: did not stop; below it:\n";
    const auto below = descendants_of(pid_);
    std::string pids = std::to_string(pid_);
    for (pid_t p : below) pids += "," + std::to_string(p);
    run("ps -o pid,ppid,pgid,stat,wchan:32,etime,args -p " + pids + log);
    if (::access("/usr/bin/gdb", X_OK) != 0) return;
    auto stacks = [&](pid_t p, const std::string& what) {
        std::ofstream(log_file_, std::ios::app) << "\n--- " << what << " " << p << ":\n";
        run("/usr/bin/gdb -p " + std::to_string(p) + " -batch -nx -ex 'thread apply all bt'" + log);
    };
    for (pid_t p : below) {
        std::ifstream comm("/proc/" + std::to_string(p) + "/comm");
        std::string name;
        std::getline(comm, name);
        if (name.starts_with("callisto-zygot")) stacks(p, "its zygote, pid");
    }
    stacks(pid_, "its own threads, pid");
}

std::string server_process::log() const {
    std::ifstream in(log_file_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

int server_process::stop(int timeout_s) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    if (!wait_exit(pid_, timeout_s, status)) {
        append_thread_stacks();
        return -1;
    }
    pid_ = -1;
    // A stopped server leaves no kernel behind (sandboxed ones are reparented to 1 if they
    // escape their bwrap): anything still naming its runtime directory is an orphan.
    const std::string mine = runtime_dir_.string() + "/";
    for (int i = 0; i < 50 && !processes_mentioning(mine).empty(); ++i)
        std::this_thread::sleep_for(milliseconds(100));
    if (auto left = processes_mentioning(mine); !left.empty()) {
        std::fprintf(stderr, "server_process: %zu process(es) outlived the server, e.g. pid %d\n",
                     left.size(), static_cast<int>(left.front()));
        return -2;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<pid_t> descendants_of(pid_t root) {
    std::map<pid_t, std::vector<pid_t>> children;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(entry.path() / "stat");
        std::string line;
        std::getline(stat, line);
        // "pid (comm) state ppid ...": the name may hold spaces and parentheses.
        const auto close = line.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 1));
        std::string state;
        pid_t parent = 0;
        if (rest >> state >> parent) children[parent].push_back(std::stoi(name));
    }
    std::vector<pid_t> out;
    for (std::vector<pid_t> next{root}; !next.empty();) {
        const pid_t p = next.back();
        next.pop_back();
        for (pid_t c : children[p]) {
            out.push_back(c);
            next.push_back(c);
        }
    }
    return out;
}

std::vector<pid_t> processes_mentioning(const std::string& needle) {
    // A process's command line, or its mounts: sandboxed kernels name no host path in their
    // command lines (bwrap's options are in a memfd), but their runtime and work directories
    // are mounted in them, which their mountinfo shows.
    auto read = [](const fs::path& file) {
        std::ifstream in(file, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        return std::move(text).str();
    };
    std::vector<pid_t> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        try {
            if (read(entry.path() / "cmdline").find(needle) != std::string::npos ||
                read(entry.path() / "mountinfo").find(needle) != std::string::npos)
                found.push_back(std::stoi(name));
        } catch (const std::exception&) {
            continue;  // it exited while being read (libstdc++ throws on ESRCH)
        }
    }
    return found;
}

}  // namespace callisto::e2e
