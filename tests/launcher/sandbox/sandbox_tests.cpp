// Integration tests of the sandbox on this host: real bwrap, real cgroups, real kernels.
// They need root (the gateway's privileged mode), as `make test` runs them.

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "launcher/kernelspec/kernel_command.hpp"
#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/kernelspec/kernelspec_check.hpp"
#include "launcher/process/kernel_runtime_dir.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "launcher/sandbox/cgroup_move_timer.hpp"
#include "launcher/sandbox/sandbox.hpp"
#include "launcher/sandbox/sandbox_probe.hpp"
#include "launcher/sandbox/sandboxed_kernel.hpp"
#include "launcher/sandbox/session_workdir.hpp"
#include "tests/launcher/isolation_probe.hpp"
#include "tests/launcher/sandbox_start.hpp"
#include "tests/launcher/test_support.hpp"

using namespace callisto::launcher;
using callisto::launcher::test::check_isolation;
using callisto::launcher::test::eventually;
using callisto::launcher::test::isolation_probe;
using callisto::launcher::test::make_venv;
using callisto::launcher::test::open_temp_dir;
using callisto::launcher::test::read_file;
using callisto::launcher::test::sandbox_start;
using callisto::launcher::test::temp_dir;
using callisto::launcher::test::venv_probe;

namespace {

constexpr uid_t test_uid = 61900;

// Runs `python -c code` in the sandbox and waits for its exit.
struct sandboxed_run : sandbox_start {
    exit_status status;

    sandboxed_run(const std::string& code, const sandbox_policy& policy = {},
                  const std::string& python = "/usr/bin/python3")
        : sandbox_start(python_c(code, python), policy, test_uid, "cltest") {
        std::mutex mutex;
        std::condition_variable changed;
        std::optional<exit_status> exited;
        process_supervisor supervisor({});
        supervisor.spawn(kernel->command(), [&](pid_t, exit_status st) {
            std::lock_guard lock(mutex);
            exited = kernel->judge(st);
            changed.notify_all();
        });
        kernel->spawned();
        std::unique_lock lock(mutex);
        REQUIRE(
            changed.wait_for(lock, std::chrono::seconds(120), [&] { return exited.has_value(); }));
        status = *exited;
    }

    static spawn_description python_c(const std::string& code, const std::string& python) {
        spawn_description inner;
        inner.argv = {python, "-c", code};
        inner.env = {{"PATH", "/usr/bin"}};
        return inner;
    }
};

// The start check of kernelspecs whose kernels run in bwrap's sandbox as test_uid.
struct sandboxed_check {
    sandbox box{"/usr/bin/bwrap", cgroup_layout::detect()};
    kernelspec_check_settings settings;

    sandboxed_check() {
        settings.box = &box;
        settings.who = {test_uid, test_uid};
    }
    sandboxed_check(const sandboxed_check&) = delete;
    sandboxed_check& operator=(const sandboxed_check&) = delete;
};

// A kernelspec named `name` that runs `python -m module -f {connection_file}`.
kernelspec module_kernelspec(const std::string& name, const std::filesystem::path& python,
                             const std::string& module) {
    kernelspec spec;
    spec.name = name;
    spec.argv = {python.string(), "-m", module, "-f", "{connection_file}"};
    return spec;
}

}  // namespace

TEST_CASE("the probe finds a usable sandbox on this host") {
    const auto probe = sandbox_probe::run("/usr/bin/bwrap", test_uid);
    INFO(probe.describe());
    CHECK(probe.usable());
    CHECK(probe.user_namespaces);
}

TEST_CASE("a move into the kernels' cgroups is timed, and the timer leaves no cgroup behind") {
    const auto layout = cgroup_layout::detect();
    if (layout.version == cgroup_version::none) return;
    const std::string name = "cltest-move-timer-" + std::to_string(::getpid());
    const auto timing = time_cgroup_move(layout, name, 2, std::chrono::milliseconds(5));
    CHECK(timing.error.empty());
    CHECK(timing.median_ms > 0);
    for (const auto& mount : {layout.v2_root, layout.v1_memory, layout.v1_pids, layout.v1_cpu})
        if (!mount.empty()) CHECK_FALSE(std::filesystem::exists(mount / layout.parent / name));
}

TEST_CASE("the cgroup move timer names what it could not do") {
    CHECK(time_cgroup_move(cgroup_layout{}, "x").error == "no cgroups");
    // A plain directory is no cgroup hierarchy: the child has no cgroup.procs to write.
    temp_dir tmp;
    cgroup_layout fake;
    fake.version = cgroup_version::v1;
    fake.v1_memory = fake.v1_pids = fake.v1_cpu = tmp.path();
    const auto timing = time_cgroup_move(fake, "probe", 2, std::chrono::milliseconds(1));
    CHECK(timing.error.find("could not join") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(tmp.path() / "callisto" / "probe"));
}

TEST_CASE("the probe refuses a missing bwrap with a clear message") {
    const auto probe = sandbox_probe::run("/nonexistent/bwrap", test_uid);
    CHECK_FALSE(probe.usable());
    CHECK(probe.failure.find("bubblewrap") != std::string::npos);
}

TEST_CASE("sandboxed code runs as the session uid, sees only its own pids and no network") {
    sandboxed_run run(isolation_probe);
    CHECK(run.status.exit_code == 0);
    check_isolation(run.output("out.txt"), test_uid);
}

TEST_CASE("a memory bomb is OOM-killed and judged as such") {
    sandbox_policy policy;
    policy.memory_bytes = 64u << 20;
    sandboxed_run run("x = bytearray(512 << 20)\nx[::4096] = b'1' * len(x[::4096])\n", policy);
    INFO(run.status.describe());
    if (cgroup_layout::detect().version == cgroup_version::none) return;  // RLIMIT_AS: MemoryError
    CHECK(run.status.describe() == "killed: out of memory (limit 64MiB)");
}

TEST_CASE("a CPU-time hog is stopped and judged as such") {
    sandbox_policy policy;
    policy.cpu_time_seconds = 1;
    sandboxed_run run("while True: pass\n", policy);
    CHECK(run.status.signal == SIGXCPU);
    CHECK(run.status.describe() == "killed: CPU time limit exceeded (1 s)");
}

TEST_CASE("writes beyond the workdir quota fail with ENOSPC") {
    sandbox_policy policy;
    policy.disk_bytes = 1u << 20;
    sandboxed_run run(R"(
import errno
try:
    with open("big", "wb") as f:
        f.write(b"x" * (2 << 20))
    r = "written"
except OSError as e:
    r = errno.errorcode[e.errno]
import os
os.remove("big")
open("out.txt", "w").write(r)
)",
                      policy);
    CHECK(run.status.exit_code == 0);
    CHECK(run.output("out.txt") == "ENOSPC");
}

TEST_CASE("a sandboxed ipykernel binds its ipc sockets as the session uid, and the dir is sealed") {
    auto spec = kernelspec::load("/usr/share/jupyter/kernels/python3");
    open_temp_dir root;
    open_temp_dir runtime_root;
    const sandbox_identity who{test_uid, test_uid};
    session_workdir workdir(root.path(), "w", who, 1u << 20);
    kernel_runtime_dir runtime(runtime_root.path(), "r", transport_kind::ipc, spec.name);
    sandbox box("/usr/bin/bwrap", cgroup_layout::detect());
    auto kernel = box.prepare(kernel_command(spec, runtime.connection_file(), workdir.path()), {},
                              who, workdir.path(), runtime.path(), runtime.connection_file(),
                              box.make_cgroup("cltest-k" + std::to_string(::getpid()), {}));
    process_supervisor supervisor({});
    const pid_t pid = supervisor.spawn(kernel->command(), {});
    kernel->spawned();
    // ipykernel rewrites its connection file after binding; sealing first would break it.
    REQUIRE(eventually(
        [&] { return runtime.ipc_sockets_present() && runtime.connection_file_rewritten(); },
        std::chrono::seconds(60)));
    CHECK(runtime.seal(who.uid) == "");
    struct stat st {};
    REQUIRE(::stat(runtime.path().c_str(), &st) == 0);
    CHECK(st.st_uid == 0);
    CHECK((st.st_mode & 07777) == 0550);
    CHECK(runtime.seal(who.uid + 1).find("owned by uid") != std::string::npos);
    supervisor.terminate(pid, std::chrono::seconds(2));
    CHECK(eventually([&] { return !supervisor.running(pid); }));
}

TEST_CASE("seal refuses an ipc socket replaced by a symlink") {
    open_temp_dir runtime_root;
    kernel_runtime_dir runtime(runtime_root.path(), "r", transport_kind::ipc, "t");
    for (int port = 1; port <= 5; ++port) {
        const auto path = runtime.connection().ip + "-" + std::to_string(port);
        if (port == 3)
            REQUIRE(::symlink("/run/some-host.sock", path.c_str()) == 0);
        else
            REQUIRE(::mknod(path.c_str(), S_IFSOCK | 0600, 0) == 0);
    }
    CHECK(runtime.ipc_sockets_present());
    CHECK(runtime.seal(::getuid()).find("-3 is not a socket") != std::string::npos);
}

TEST_CASE("a venv outside /usr runs in the sandbox with its own packages, read-only") {
    open_temp_dir envs;
    const auto python = make_venv(envs.path() / "ds", "WHERE = 'the venv'\n");
    sandboxed_run run(venv_probe, {}, python.string());
    INFO(read_file(run.workdir->path() / "out.txt"));
    CHECK(run.status.exit_code == 0);
    CHECK(nlohmann::json::parse(run.output("out.txt")) ==
          nlohmann::json::array(
              {(envs.path() / "ds").string(), python.string(), "the venv", false, "EROFS"}));
    // It, and only it, beyond /usr: the layout both sandboxes bind (bwrap's options are in a
    // memfd, not its command line; the code above saw the venv, read-only).
    CHECK(run.kernel->layout().environment ==
          std::vector<std::filesystem::path>{envs.path() / "ds"});
}

TEST_CASE("a kernel whose interpreter is missing is not prepared: the error names the file") {
    open_temp_dir root;
    open_temp_dir runtime_root;
    const sandbox_identity who{test_uid, test_uid};
    session_workdir workdir(root.path(), "w", who, 1u << 20);
    kernel_runtime_dir runtime(runtime_root.path(), "r", transport_kind::ipc, "t");
    sandbox box("/usr/bin/bwrap", cgroup_layout::detect());
    spawn_description inner;
    inner.argv = {(root.path() / "gone" / "bin" / "python3").string(), "-c", "pass"};
    CHECK_THROWS_WITH_AS(
        box.prepare(inner, {}, who, workdir.path(), runtime.path(), runtime.connection_file(),
                    box.make_cgroup("cltest-gone", {})),
        ((root.path() / "gone" / "bin" / "python3").string() + ": No such file or directory")
            .c_str(),
        std::runtime_error);
}

TEST_CASE("at start, a kernelspec's module is looked for by its interpreter in a sandbox") {
    open_temp_dir envs;
    const auto python = make_venv(envs.path() / "ds", "WHERE = 'the venv'\n");
    const sandboxed_check check;
    const auto& sandboxed = check.settings;
    auto spec = module_kernelspec("ds", python, "envmod");
    CHECK(kernelspec_problem(spec, sandboxed) == "");
    CHECK(kernelspec_problem(spec, {}) == "");  // unsandboxed: as this process

    // An isolated venv without ipykernel: its kernels could not start.
    spec.argv[2] = "ipykernel_launcher";
    CHECK(kernelspec_problem(spec, sandboxed) ==
          python.string() +
              " finds no module ipykernel_launcher in the sandbox: install the package that "
              "provides it into the environment");
    CHECK(kernelspec_problem(spec, {}) ==
          python.string() +
              " finds no module ipykernel_launcher: install the package that provides it into "
              "the environment");
    // The kernelspec's env counts: its PYTHONPATH may be what provides the module.
    spec.argv[2] = "envmod";
    std::filesystem::rename(envs.path() / "ds" / "lib", envs.path() / "ds" / "elsewhere");
    CHECK(kernelspec_problem(spec, sandboxed).find("finds no module envmod") != std::string::npos);
    const auto version = std::filesystem::canonical("/usr/bin/python3").filename().string();
    spec.env["PYTHONPATH"] =
        (envs.path() / "ds" / "elsewhere" / version / "site-packages").string();
    CHECK(kernelspec_problem(spec, sandboxed) == "");
}

TEST_CASE(
    "at start, an interpreter that fails to run in the sandbox is refused with what it said") {
    open_temp_dir envs;
    // Its #! names an interpreter that is not there: bwrap's execvp fails.
    const auto script = envs.path() / "broken" / "bin" / "python3";
    std::filesystem::create_directories(script.parent_path());
    callisto::launcher::test::write_file(script, "#!/nonexistent/python3\n");
    ::chmod(script.c_str(), 0755);
    const sandboxed_check check;
    const auto why = kernelspec_problem(module_kernelspec("broken", script, "ipykernel_launcher"),
                                        check.settings);
    INFO(why);
    CHECK(why.find(script.string() + " does not run in the sandbox: it exited with code 1: " +
                   "bwrap: execvp " + script.string() + ": No such file or directory") == 0);
}
