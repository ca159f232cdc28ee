#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher/process/process_supervisor.hpp"
#include "tests/launcher/test_support.hpp"

using namespace std::chrono_literals;
using callisto::launcher::exit_status;
using callisto::launcher::process_supervisor;
using callisto::launcher::spawn_description;
using callisto::launcher::test::eventually;
using callisto::launcher::test::read_file;
using callisto::launcher::test::temp_dir;

namespace {

// Collects exit reports from the supervisor thread; tests wait on it with a generous timeout.
class exits {
public:
    process_supervisor::exit_handler handler() {
        return [this](pid_t pid, exit_status status) {
            std::lock_guard lock(mutex_);
            statuses_[pid] = status;
            ++calls_[pid];
            changed_.notify_all();
        };
    }
    std::optional<exit_status> wait(pid_t pid, std::chrono::seconds timeout = 20s) {
        std::unique_lock lock(mutex_);
        if (!changed_.wait_for(lock, timeout, [&] { return statuses_.contains(pid); }))
            return std::nullopt;
        return statuses_.at(pid);
    }
    int calls(pid_t pid) {
        std::lock_guard lock(mutex_);
        return calls_[pid];
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<pid_t, exit_status> statuses_;
    std::map<pid_t, int> calls_;
};

// Built field by field so fields added to spawn_description later keep their defaults.
spawn_description command(std::vector<std::string> argv,
                          std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"}},
                          std::filesystem::path cwd = {}) {
    spawn_description what;
    what.argv = std::move(argv);
    what.env = std::move(env);
    what.cwd = std::move(cwd);
    return what;
}

spawn_description shell(const std::string& script) { return command({"/bin/sh", "-c", script}); }

}  // namespace

TEST_CASE("exit_status describes normal exits and signals") {
    CHECK(exit_status{1, 0, false, {}}.describe() == "exited with code 1");
    CHECK(exit_status{-1, SIGKILL, false, {}}.describe() == "killed by signal 9 (SIGKILL)");
    CHECK(exit_status{-1, SIGSEGV, true, {}}.describe() ==
          "killed by signal 11 (SIGSEGV), core dumped");
}

TEST_CASE("a child's exit code is reported once, and the child is forgotten") {
    process_supervisor supervisor({});
    exits seen;
    const pid_t pid = supervisor.spawn(shell("exit 3"), seen.handler());
    const auto status = seen.wait(pid);
    REQUIRE(status);
    CHECK(status->exit_code == 3);
    CHECK(status->signal == 0);
    CHECK(eventually([&] { return !supervisor.running(pid); }));
    CHECK(supervisor.running_count() == 0);
    CHECK(seen.calls(pid) == 1);
    supervisor.signal_group(pid, SIGTERM);  // reaped: a no-op, not an error
}

TEST_CASE("terminate sends SIGTERM first") {
    process_supervisor supervisor({});
    exits seen;
    const pid_t pid = supervisor.spawn(command({"sleep", "600"}), seen.handler());
    CHECK(supervisor.running(pid));
    supervisor.terminate(pid, 60s);
    const auto status = seen.wait(pid);
    REQUIRE(status);
    CHECK(status->signal == SIGTERM);
    CHECK(status->describe() == "killed by signal 15 (SIGTERM)");
}

TEST_CASE("terminate escalates to SIGKILL after the grace period when SIGTERM is ignored") {
    temp_dir tmp;
    const auto ready = tmp.path() / "ready";
    process_supervisor supervisor({});
    exits seen;
    const pid_t pid = supervisor.spawn(
        shell("trap '' TERM; touch " + ready.string() + "; exec sleep 600"), seen.handler());
    REQUIRE(eventually([&] { return std::filesystem::exists(ready); }));
    supervisor.terminate(pid, 300ms);
    const auto status = seen.wait(pid);
    REQUIRE(status);
    CHECK(status->signal == SIGKILL);
}

TEST_CASE("spawning a missing binary throws system_error naming it") {
    process_supervisor supervisor({});
    CHECK_THROWS_WITH_AS(supervisor.spawn(command({"/nonexistent/callisto-kernel"}, {}), {}),
                         doctest::Contains("/nonexistent/callisto-kernel"), std::system_error);
    CHECK_THROWS_WITH_AS(supervisor.spawn(command({"callisto-no-such-program"}), {}),
                         doctest::Contains("callisto-no-such-program"), std::system_error);
    try {
        supervisor.spawn(command({"/nonexistent/callisto-kernel"}, {}), {});
    } catch (const std::system_error& e) {
        CHECK(e.code().value() == ENOENT);
    }
    CHECK_THROWS_AS(supervisor.spawn(command({"/bin/true"}, {}, "/nonexistent-cwd"), {}),
                    std::system_error);
    CHECK(supervisor.running_count() == 0);
}

TEST_CASE("a child runs in its own process group, with exactly the given env, cwd and stdin") {
    temp_dir tmp;
    // An fd the gateway leaked without CLOEXEC must still not reach the kernel.
    const int leaked = ::open("/dev/zero", O_RDONLY);
    REQUIRE(leaked >= 0);
    process_supervisor supervisor({});
    exits seen;
    const pid_t pid = supervisor.spawn(
        command({"sleep", "600"}, {{"PATH", "/usr/bin:/bin"}, {"ONLY_THIS", "yes"}}, tmp.path()),
        seen.handler());
    ::close(leaked);

    // spawn returned after execve, so /proc shows the new program's state.
    const auto proc = std::filesystem::path("/proc") / std::to_string(pid);
    CHECK(::getpgid(pid) == pid);
    CHECK(read_file(proc / "environ") == std::string("ONLY_THIS=yes\0PATH=/usr/bin:/bin\0", 33));
    CHECK(std::filesystem::read_symlink(proc / "cwd") == tmp.path());
    CHECK(std::filesystem::read_symlink(proc / "fd" / "0") == "/dev/null");
    // The dynamic loader of the new program opens its libraries for a moment (fd 3 ->
    // libc.so.6); a leaked fd would stay. So the fds are checked once `sleep` sleeps: its
    // state is S only in nanosleep, long after the loader is done. (Waiting only for "0, 1, 2"
    // could catch the moment before the loader opened libc, and then see it open.)
    auto open_fds = [&] {
        std::set<std::string> fds;
        for (const auto& entry : std::filesystem::directory_iterator(proc / "fd"))
            fds.insert(entry.path().filename().string());
        return fds;
    };
    auto sleeping = [&] {
        const std::string stat = read_file(proc / "stat");
        const auto close = stat.rfind(')');
        return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'S';
    };
    const std::set<std::string> standard{"0", "1", "2"};
    for (int i = 0; i < 250 && !(sleeping() && open_fds() == standard); ++i)
        std::this_thread::sleep_for(20ms);
    std::string seen_fds;
    for (const auto& fd : open_fds())
        seen_fds += fd + " -> " + std::filesystem::read_symlink(proc / "fd" / fd).string() + "; ";
    INFO("the child's fds: " << seen_fds);
    CHECK(open_fds() == standard);

    supervisor.terminate(pid, 20s);
    REQUIRE(seen.wait(pid));
}

TEST_CASE("a child starts with default signal handling even when the gateway blocks or ignores") {
    // The supervisor thread inherits the constructing thread's signal mask.
    sigset_t term, old_mask;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, &old_mask);
    auto old_int = std::signal(SIGINT, SIG_IGN);
    std::optional<exit_status> by_term, by_int;
    {
        process_supervisor supervisor({});
        exits seen;
        const auto sleeper = command({"sleep", "600"});
        const pid_t a = supervisor.spawn(sleeper, seen.handler());
        const pid_t b = supervisor.spawn(sleeper, seen.handler());
        supervisor.terminate(a, 60s);
        supervisor.signal_group(b, SIGINT);
        by_term = seen.wait(a);
        by_int = seen.wait(b);
    }
    std::signal(SIGINT, old_int);
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    REQUIRE(by_term);
    REQUIRE(by_int);
    CHECK(by_term->signal == SIGTERM);
    CHECK(by_int->signal == SIGINT);
}

TEST_CASE("signal_group reaches the whole process group") {
    temp_dir tmp;
    const auto grandchild_pid = tmp.path() / "pid";
    process_supervisor supervisor({});
    exits seen;
    // The shell waits for a background sleep; killing only the shell would leave the sleep.
    const pid_t pid = supervisor.spawn(
        shell("sleep 600 & echo $! > " + grandchild_pid.string() + "; wait"), seen.handler());
    REQUIRE(eventually([&] { return read_file(grandchild_pid).find('\n') != std::string::npos; }));
    const pid_t grandchild = std::stoi(read_file(grandchild_pid));
    CHECK(::getpgid(grandchild) == pid);
    supervisor.signal_group(pid, SIGKILL);
    REQUIRE(seen.wait(pid));
    // The grandchild is reparented to init (or a subreaper) and reaped there; poll until gone.
    CHECK(eventually([&] { return ::kill(grandchild, 0) != 0 || ::getpgid(grandchild) != pid; }));
}

TEST_CASE("spawn works from many threads at once and from an exit handler") {
    process_supervisor supervisor({});
    exits seen;
    std::vector<std::thread> threads;
    std::mutex pids_mutex;
    std::vector<pid_t> pids;
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&, i] {
            const pid_t pid =
                supervisor.spawn(shell("exit " + std::to_string(10 + i)), seen.handler());
            std::lock_guard lock(pids_mutex);
            pids.push_back(pid);
        });
    for (auto& t : threads) t.join();
    REQUIRE(pids.size() == 4);
    for (pid_t pid : pids) {
        const auto status = seen.wait(pid);
        REQUIRE(status);
        CHECK(status->exit_code >= 10);
        CHECK(status->exit_code <= 13);
    }

    // An exit handler runs on the supervisor thread; spawning from it must not deadlock.
    std::atomic<pid_t> second{0};
    const pid_t first = supervisor.spawn(shell("exit 0"), [&](pid_t, exit_status) {
        second = supervisor.spawn(shell("exit 7"), seen.handler());
    });
    REQUIRE(eventually([&] { return second.load() != 0; }));
    const auto status = seen.wait(second.load());
    REQUIRE(status);
    CHECK(status->exit_code == 7);
    (void)first;
}

TEST_CASE("the destructor kills children still running and still reports their exits") {
    exits seen;
    pid_t pid = 0;
    {
        process_supervisor supervisor({});
        pid = supervisor.spawn(command({"sleep", "600"}), seen.handler());
        CHECK(supervisor.running_count() == 1);
    }
    const auto status = seen.wait(pid, 0s);  // already called before the destructor returned
    REQUIRE(status);
    CHECK(status->signal == SIGKILL);
    CHECK(::kill(pid, 0) != 0);  // reaped: the pid no longer exists
}

namespace {

// A helper process plays the gateway: it starts a supervisor, spawns `what`, reports the
// child's pid and exits without cleaning up. True when the child then dies (SIGKILLed by the
// kernel as its parent-death signal).
bool child_dies_with_its_gateway(const spawn_description& what) {
    int report[2];
    REQUIRE(::pipe(report) == 0);
    const pid_t gateway = ::fork();
    REQUIRE(gateway >= 0);
    if (gateway == 0) {
        ::close(report[0]);
        auto* supervisor = new process_supervisor({});  // leaked on purpose: no destructor runs
        pid_t pid = supervisor->spawn(what, {});
        [[maybe_unused]] auto n = ::write(report[1], &pid, sizeof pid);
        ::_exit(0);
    }
    ::close(report[1]);
    pid_t child = 0;
    const auto n = ::read(report[0], &child, sizeof child);
    ::close(report[0]);
    ::waitpid(gateway, nullptr, 0);
    REQUIRE(n == static_cast<ssize_t>(sizeof child));
    // Orphans are reaped by init or a subreaper, which may be slow; a zombie counts as dead.
    const auto stat_file = std::filesystem::path("/proc") / std::to_string(child) / "stat";
    const bool died = eventually([&] {
        const auto stat = read_file(stat_file);
        return stat.empty() || stat.find(") Z ") != std::string::npos;
    });
    if (!died) ::kill(child, SIGKILL);
    return died;
}

}  // namespace

TEST_CASE("children running as another uid die with the gateway too (setresuid clears PDEATHSIG)") {
    if (::geteuid() != 0) {
        MESSAGE("skipped: changing uid needs root");
        return;
    }
    auto what = command({"sleep", "600"});
    what.uid = 65534;  // nobody, as a sandboxed kernel runs as its session uid
    what.gid = 65534;
    CHECK(child_dies_with_its_gateway(what));
}

TEST_CASE("children die with the gateway (PR_SET_PDEATHSIG)") {
    CHECK(child_dies_with_its_gateway(command({"sleep", "600"})));
}
