// Integration tests of one session sandbox's cgroup on this host (real bwrap, real cgroups):
// its starts and the kernels sharing it run in one cgroup under one set of limits, as E2B's
// contexts share their sandbox's memory. They need root, as `make test` runs them.

#include <doctest/doctest.h>

#include <unistd.h>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/kernel_runtime_dir.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/sandbox/sandbox.hpp"
#include "launcher/sandbox/sandboxed_kernel.hpp"
#include "launcher/sandbox/session_sandbox.hpp"
#include "tests/launcher/sandbox_start.hpp"
#include "tests/launcher/test_support.hpp"

using namespace callisto::launcher;
using callisto::launcher::test::eventually;
using callisto::launcher::test::open_temp_dir;

namespace {

constexpr uid_t first_test_uid = 61940;

// One session sandbox over real bwrap and cgroups, and its starts' exits.
struct session_fixture {
    open_temp_dir workdir_root;
    open_temp_dir runtime_root;
    sandbox box{"/usr/bin/bwrap", cgroup_layout::detect(), "cltest" + std::to_string(::getpid())};
    sandbox_uid_pool uids{first_test_uid, 2};
    process_supervisor supervisor{{}};
    std::unique_ptr<session_sandbox> session;

    std::mutex mutex;
    std::condition_variable changed;
    std::map<pid_t, exit_status> exits;

    explicit session_fixture(const sandbox_policy& policy) {
        session = std::make_unique<session_sandbox>(box, uids, workdir_root.path(), "s", policy,
                                                    kernelspec{});
    }

    bool has_cgroups() const { return box.cgroups().version != cgroup_version::none; }

    // `python -c code` started in the session; the start stays alive while its handle does.
    struct start {
        std::unique_ptr<kernel_runtime_dir> runtime;
        std::shared_ptr<sandboxed_kernel> kernel;
        pid_t pid = 0;
    };
    start run(const std::string& code, const std::string& name) {
        start s;
        s.runtime = std::make_unique<kernel_runtime_dir>(runtime_root.path(), name,
                                                         transport_kind::ipc, "t");
        spawn_description inner;
        inner.argv = {"/usr/bin/python3", "-c", code};
        inner.env = {{"PATH", "/usr/bin"}};
        s.kernel = session->prepare(inner, *s.runtime);
        s.pid =
            supervisor.spawn(s.kernel->command(), [this, k = s.kernel](pid_t pid, exit_status st) {
                std::lock_guard lock(mutex);
                exits[pid] = k->judge(st);
                changed.notify_all();
            });
        s.kernel->spawned();
        return s;
    }

    exit_status wait_exit(pid_t pid) {
        std::unique_lock lock(mutex);
        REQUIRE(
            changed.wait_for(lock, std::chrono::seconds(120), [&] { return exits.count(pid); }));
        return exits.at(pid);
    }

    bool file_says(const std::string& file, const std::string& text) {
        std::ifstream in(session->workdir() / file);
        std::string got;
        std::getline(in, got);
        return got == text;
    }
};

// The cgroup a host process is in, by its memory hierarchy (v1) or the unified one (v2).
std::string memory_cgroup_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    for (std::string line; std::getline(in, line);) {
        const auto first = line.find(':'), second = line.find(':', first + 1);
        const auto controllers = line.substr(first + 1, second - first - 1);
        if (controllers == "memory" || controllers.empty()) return line.substr(second + 1);
    }
    return {};
}

// Holds `mib` MiB touched, says so in `file`, then sleeps.
std::string hold_memory(int mib, const std::string& file) {
    return "import time\nx = bytearray(" + std::to_string(mib) +
           " << 20)\nx[::4096] = b'1' * len(x[::4096])\nopen('" + file +
           "', 'w').write('held')\ntime.sleep(300)\n";
}

}  // namespace

TEST_CASE("two kernels of one session sandbox run in its one cgroup, under one memory limit") {
    sandbox_policy policy;
    policy.memory_bytes = 256u << 20;
    session_fixture f(policy);
    if (!f.has_cgroups()) return;
    const auto name = f.session->cgroup_name();
    REQUIRE(!name.empty());

    // Each alone fits the limit; together they do not, as in one VM.
    auto first = f.run(hold_memory(80, "first"), "r1");
    REQUIRE(eventually([&] { return f.file_says("first", "held"); }, std::chrono::seconds(60)));
    CHECK(memory_cgroup_of(first.pid).ends_with("/" + name));
    // The larger one is the OOM killer's choice.
    auto second = f.run(hold_memory(200, "second"), "r2");
    CHECK(memory_cgroup_of(second.pid).ends_with("/" + name));

    const auto killed = f.wait_exit(second.pid);
    CHECK(killed.describe() == "killed: out of memory (limit 256MiB)");
    CHECK(!f.file_says("second", "held"));
    // The other start lives on, and its own end is not taken for an OOM kill.
    CHECK(::kill(first.pid, 0) == 0);
    f.supervisor.signal_group(first.pid, SIGTERM);
    const auto ended = f.wait_exit(first.pid);
    CHECK(ended.signal == SIGTERM);
    CHECK(!ended.out_of_memory);
}

TEST_CASE("a session's cgroup outlives its starts; the last start out kills what is left") {
    session_fixture f(sandbox_policy{});
    if (!f.has_cgroups()) return;
    const auto name = f.session->cgroup_name();
    const auto dir = f.box.cgroups().hierarchies().front() / f.box.cgroups().parent / name;
    REQUIRE(std::filesystem::is_directory(dir));

    // Two starts prepared (not yet run), and a process in the cgroup that neither owns: what a
    // bwrap killed while setting up leaves behind, or a command run beside the kernel.
    spawn_description a, b;
    a.argv = b.argv = {"/usr/bin/python3", "-c", "pass"};
    kernel_runtime_dir ra(f.runtime_root.path(), "ra", transport_kind::ipc, "t");
    kernel_runtime_dir rb(f.runtime_root.path(), "rb", transport_kind::ipc, "t");
    auto start_a = f.session->prepare(a, ra);
    auto start_b = f.session->prepare(b, rb);
    CHECK(start_b->cgroup_name() == name);
    spawn_description stray;
    stray.argv = {"/bin/sleep", "300"};
    stray.cgroup_procs_files = start_b->command().cgroup_procs_files;
    std::optional<exit_status> stray_exit;
    std::mutex m;
    const pid_t stray_pid = f.supervisor.spawn(stray, [&](pid_t, exit_status st) {
        std::lock_guard lock(m);
        stray_exit = st;
    });
    REQUIRE(eventually([&] { return memory_cgroup_of(stray_pid).ends_with("/" + name); },
                       std::chrono::seconds(10)));

    start_a.reset();  // another start is still in the sandbox: nothing is killed
    CHECK(::kill(stray_pid, 0) == 0);
    start_b.reset();  // the last one out
    CHECK(eventually(
        [&] {
            std::lock_guard lock(m);
            return stray_exit.has_value();
        },
        std::chrono::seconds(10)));
    CHECK(std::filesystem::is_directory(dir));  // the session keeps it for its next start

    f.session.reset();
    CHECK(!std::filesystem::exists(dir));
}

TEST_CASE("a kernel's next sandbox keeps its cgroup when the last one's start ends after it") {
    session_fixture f(sandbox_policy{});
    if (!f.has_cgroups()) return;
    // A renewed kernel: its sandbox dropped while its last start is still being reaped, and a
    // new one made for the same kernel at once.
    spawn_description inner;
    inner.argv = {"/usr/bin/python3", "-c", "pass"};
    kernel_runtime_dir old_runtime(f.runtime_root.path(), "old", transport_kind::ipc, "t");
    auto old_start = f.session->prepare(inner, old_runtime);
    const auto old_name = f.session->cgroup_name();
    f.session.reset();
    f.session = std::make_unique<session_sandbox>(f.box, f.uids, f.workdir_root.path(), "s",
                                                  sandbox_policy{}, kernelspec{});
    CHECK(f.session->cgroup_name() != old_name);
    const auto& layout = f.box.cgroups();
    const auto dir = layout.hierarchies().front() / layout.parent / f.session->cgroup_name();
    REQUIRE(std::filesystem::is_directory(dir));
    old_start.reset();
    CHECK(std::filesystem::is_directory(dir));
    CHECK(!std::filesystem::exists(layout.hierarchies().front() / layout.parent / old_name));
}
