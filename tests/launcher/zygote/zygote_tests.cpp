// Integration tests of the zygote on this host: the real callisto-zygote, real namespaces,
// cgroups and seccomp, real Python. They need root, as `make test` runs them.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "launcher/process/kernel_runtime_dir.hpp"
#include "launcher/sandbox/sandbox.hpp"
#include "launcher/sandbox/sandboxed_kernel.hpp"
#include "launcher/sandbox/session_workdir.hpp"
#include "launcher/zygote/zygote_client.hpp"
#include "launcher/zygote/zygote_pool.hpp"
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
using namespace std::chrono_literals;

namespace {

constexpr uid_t test_uid = 61910;

// One zygote (preloading numpy) and the exits of the kernels it forks.
struct zygote_fixture {
    process_supervisor supervisor{{}};
    open_temp_dir scratch_root;
    std::mutex mutex;
    std::condition_variable changed;
    std::map<pid_t, exit_status> exits;
    std::string gone_why;
    std::unique_ptr<zygote_client> client;

    // `python`: the program the zygote starts as (zygote_pool::program_for).
    explicit zygote_fixture(const std::filesystem::path& python = zygote_pool::built_python()) {
        kernelspec spec;
        spec.name = "zt";
        spec.language = "python";
        const zygote_settings settings{CALLISTO_ZYGOTE_PROGRAM, python, scratch_root.path()};
        client = std::make_unique<zygote_client>(supervisor, settings, spec,
                                                 std::vector<std::string>{"numpy"},
                                                 callisto::logger(), [this](const std::string& w) {
                                                     std::lock_guard lock(mutex);
                                                     gone_why = w.empty() ? "gone" : w;
                                                     changed.notify_all();
                                                 });
        REQUIRE(eventually([&] { return client->ready(); }, 60s));
    }

    pid_t fork(const spawn_description& what, const sandboxed_kernel* boxed = nullptr) {
        return client->fork(what, [this, boxed](pid_t pid, exit_status st) {
            std::lock_guard lock(mutex);
            exits[pid] = boxed ? boxed->judge(st) : st;
            changed.notify_all();
        });
    }

    exit_status wait_exit(pid_t pid) {
        std::unique_lock lock(mutex);
        REQUIRE(changed.wait_for(lock, 60s, [&] { return exits.contains(pid); }));
        return exits[pid];
    }
};

// A sandboxed start as the gateway prepares it, with a module `probe` (or `module`) in its
// workdir and the fork a zygote may make of it.
struct jailed_kernel : sandbox_start {
    spawn_description what;

    jailed_kernel(const std::string& module_code, uid_t uid = test_uid,
                  const std::string& module = "probe",
                  const std::string& python = "/usr/bin/python3")
        : sandbox_start(python_m(module, python), sandbox_policy{}, uid, "clzt") {
        std::ofstream(workdir->path() / (module + ".py")) << module_code;
        what = kernel->command();
        what.zygote = zygote_fork{"zt", python_m(module, python).argv, {}, kernel->layout()};
    }

    static spawn_description python_m(const std::string& module,
                                      const std::string& python = "/usr/bin/python3") {
        spawn_description inner;
        inner.argv = {python, "-m", module};
        inner.env = {{"PATH", "/usr/bin"}};
        return inner;
    }
};

// The memory a cgroup holds charged, by the procs file of its memory hierarchy (cgroup v1's
// memory.usage_in_bytes or v2's memory.current); nullopt without a memory controller.
std::optional<std::uint64_t> memory_charged(const std::vector<std::filesystem::path>& procs) {
    for (const auto& file : procs)
        for (const char* name : {"memory.usage_in_bytes", "memory.current"}) {
            std::ifstream in(file.parent_path() / name);
            std::uint64_t bytes = 0;
            if (in >> bytes) return bytes;
        }
    return std::nullopt;
}

// Whether `needle` is anywhere in the readable memory of `pid` (as root, through /proc).
bool memory_contains(pid_t pid, const std::string& needle) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::ifstream mem("/proc/" + std::to_string(pid) + "/mem", std::ios::binary);
    std::string line;
    while (std::getline(maps, line)) {
        unsigned long start = 0, end = 0;
        char perms[5] = {};
        if (std::sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3) continue;
        if (perms[0] != 'r' || end - start > (1ul << 30)) continue;
        std::string bytes(end - start, '\0');
        mem.clear();
        mem.seekg(static_cast<std::streamoff>(start));
        if (!mem.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) continue;
        if (bytes.find(needle) != std::string::npos) return true;
    }
    return false;
}

}  // namespace

TEST_CASE("the zygote learns the pages an ipykernel start writes, which each such fork faults in") {
    zygote_fixture z;
    // A rehearsed start and its first messages write thousands of the zygote's pages; none
    // would mean the rehearsal failed, or its report did not reach the forks.
    CHECK(z.client->prefaulted_pages() > 500);
}

TEST_CASE("the pages a fork faults in first are charged to its own memory cgroup") {
    zygote_fixture z;
    const auto prefaulted = z.client->prefaulted_pages();
    REQUIRE(prefaulted > 500);
    // Named as ipykernel's modules are, so that its fork faults the pages in; it waits.
    jailed_kernel k("import os, time\nwhile not os.path.exists('go'): time.sleep(0.05)\n", test_uid,
                    "ipykernel_probe");
    const pid_t pid = z.fork(k.what, k.kernel.get());
    const auto charged = memory_charged(k.what.cgroup_procs_files);
    std::ofstream(k.workdir->path() / "go") << "";
    CHECK(z.wait_exit(pid).exit_code == 0);
    if (!charged) {
        MESSAGE("no memory controller here: not checked");
        return;
    }
    // Charged where they were faulted in: in the zygote's cgroup, the kernel's would hold a
    // megabyte or two (its own Python's new memory), not the prefaulted pages' 15 MiB.
    CHECK(*charged >= prefaulted * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) / 2);
}

TEST_CASE("a zygote's fork is walled in as bwrap's kernels are: uid, pids, network, files") {
    zygote_fixture z;
    jailed_kernel k(isolation_probe);
    const pid_t pid = z.fork(k.what, k.kernel.get());
    CHECK(z.client->owns(pid));
    CHECK(z.wait_exit(pid).exit_code == 0);
    check_isolation(k.output("out.txt"), test_uid);
}

TEST_CASE(
    "a zygote started as a venv's interpreter forks kernels with the venv's packages, shown "
    "read-only in their jail") {
    open_temp_dir envs;
    const auto python = make_venv(envs.path() / "ds", "WHERE = 'the venv'\n");
    zygote_fixture z(python);
    jailed_kernel k(venv_probe, test_uid, "probe", python.string());
    CHECK(k.kernel->layout().environment == std::vector<std::filesystem::path>{envs.path() / "ds"});
    const pid_t pid = z.fork(k.what, k.kernel.get());
    CHECK(z.wait_exit(pid).exit_code == 0);
    INFO(k.output("out.txt"));
    // The venv has no numpy, though the zygote was asked to preload it and the system has it.
    CHECK(nlohmann::json::parse(k.output("out.txt")) ==
          nlohmann::json::array(
              {(envs.path() / "ds").string(), python.string(), "the venv", false, "EROFS"}));
}

TEST_CASE("the jail's pid 1 is callisto-jail-init, holding none of the zygote's memory") {
    zygote_fixture z;
    jailed_kernel k(
        "import os, time\nopen('out.txt', 'w').write('%d %d' % (os.getpid(), "
        "os.getppid()))\ntime.sleep(60)");
    const pid_t pid = z.fork(k.what, k.kernel.get());
    REQUIRE(eventually([&] { return !k.output("out.txt").empty(); }, 30s));
    CHECK(k.output("out.txt") == "2 1");  // as under bwrap
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    CHECK(exe.filename() == "callisto-jail-init");
    CHECK(exe.parent_path() ==
          std::filesystem::path(CALLISTO_ZYGOTE_PROGRAM).parent_path());  // beside the zygote
    // The zygote's Python and numpy are some 100 MB; a copy of them would show here.
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    long rss_kib = -1;
    while (std::getline(status, line))
        if (line.starts_with("VmRSS:")) rss_kib = std::atol(line.c_str() + 6);
    CHECK(rss_kib > 0);
    CHECK(rss_kib < 20 * 1024);
    z.client->terminate(pid, 100ms);
    z.wait_exit(pid);
}

TEST_CASE(
    "a zygote without callisto-jail-init beside it says so at once, and callisto-jail-init "
    "refuses to run by hand") {
    temp_dir dir;
    const auto lone = dir.path() / "callisto-zygote";
    std::filesystem::copy_file(CALLISTO_ZYGOTE_PROGRAM, lone);
    const auto err = dir.path() / "err.txt";
    const std::string zygote = lone.string() + " --control-fd=3 --scratch=" + dir.path().string() +
                               " --python=/usr/bin/python3 2>" + err.string();
    const int status = std::system(zygote.c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(read_file(err).find("callisto-jail-init") != std::string::npos);

    const auto jail_init =
        std::filesystem::path(CALLISTO_ZYGOTE_PROGRAM).parent_path() / "callisto-jail-init";
    const int by_hand = std::system((jail_init.string() + " 2>" + err.string()).c_str());
    CHECK(WIFEXITED(by_hand));
    CHECK(WEXITSTATUS(by_hand) == 2);
    CHECK(read_file(err).find("usage") != std::string::npos);
}

TEST_CASE("a forked kernel is confined: no capabilities, no_new_privs, seccomp, own hostname") {
    zygote_fixture z;
    jailed_kernel k(R"(
import json, os, socket
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
try:
    open("/proc/1/environ").read()
    environ = "readable"
except OSError as e:
    environ = type(e).__name__
json.dump({"caps": [status[c].strip() for c in ("CapEff", "CapPrm", "CapBnd", "CapAmb")],
           "nnp": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
           "host": socket.gethostname(), "fds": fds, "pid1_environ": environ,
           "env": sorted(os.environ)}, open("out.json", "w"))
)");
    const pid_t pid = z.fork(k.what, k.kernel.get());
    CHECK(z.wait_exit(pid).exit_code == 0);
    const auto out = nlohmann::json::parse(k.output("out.json"));
    INFO(out.dump());
    for (const auto& cap : out["caps"]) CHECK(cap == "0000000000000000");
    CHECK(out["nnp"] == "1");
    CHECK(out["seccomp"] == "2");
    CHECK(out["host"] == "kernel");
    CHECK(out["pid1_environ"] == "PermissionError");  // pid 1 is a copy of the zygote
    // stdin, stdout, stderr and the listing's own descriptor: nothing of the zygote's.
    CHECK(out["fds"].size() <= 4);
    for (const auto& name : out["env"]) CHECK(name != "PYDEVD_DISABLE_FILE_VALIDATION");
}

TEST_CASE("device nodes work in a fork: /dev/null, /dev/zero, /dev/urandom, subprocess DEVNULL") {
    zygote_fixture z;
    jailed_kernel k(R"(
import json, os, subprocess
out = {}
for node in ("null", "zero", "full", "random", "urandom"):
    try:
        with open("/dev/" + node, "rb") as f:
            f.read(1)
        out[node] = "ok"
    except OSError as e:
        out[node] = type(e).__name__
with open("/dev/null", "w") as f:
    f.write("x")
out["devnull_run"] = subprocess.run(["/bin/true"], stdout=subprocess.DEVNULL).returncode
json.dump(out, open("out.json", "w"))
)");
    const pid_t pid = z.fork(k.what, k.kernel.get());
    CHECK(z.wait_exit(pid).exit_code == 0);
    const auto out = nlohmann::json::parse(k.output("out.json"));
    INFO(out.dump());
    for (const char* node : {"null", "zero", "full", "random", "urandom"}) CHECK(out[node] == "ok");
    CHECK(out["devnull_run"] == 0);
}

TEST_CASE("a kernel's environment never enters the zygote's memory, which later forks copy") {
    zygote_fixture z;
    jailed_kernel k("import os; assert os.environ['KERNEL_API_KEY'].startswith('sk-')");
    const std::string secret = "sk-" + std::to_string(::getpid()) + "-do-not-copy-f00dcafe";
    k.what.env["KERNEL_API_KEY"] = secret;
    const pid_t pid = z.fork(k.what, k.kernel.get());
    CHECK(z.wait_exit(pid).exit_code == 0);  // the kernel had it
    // What the zygote did read stays in its memory (the scan finds the order's paths)...
    CHECK(memory_contains(z.client->pid(), k.workdir->path().string()));
    // ...and the environment was never among it.
    CHECK_FALSE(memory_contains(z.client->pid(), secret));
}

TEST_CASE("forked kernels share the zygote's imports but not its random state") {
    zygote_fixture z;
    const char* code = R"(
import json, random, sys, uuid
preloaded = "numpy" in sys.modules
import numpy
json.dump({"preloaded": preloaded, "random": random.random(), "numpy": numpy.random.rand(),
           "uuid": str(uuid.uuid4())}, open("out.json", "w"))
)";
    jailed_kernel a(code, test_uid);
    jailed_kernel b(code, test_uid + 1);
    const pid_t pa = z.fork(a.what, a.kernel.get());
    const pid_t pb = z.fork(b.what, b.kernel.get());
    CHECK(z.wait_exit(pa).exit_code == 0);
    CHECK(z.wait_exit(pb).exit_code == 0);
    const auto ja = nlohmann::json::parse(a.output("out.json"));
    const auto jb = nlohmann::json::parse(b.output("out.json"));
    INFO(ja.dump() << " " << jb.dump());
    CHECK(ja["preloaded"] == true);
    CHECK(jb["preloaded"] == true);
    CHECK(ja["random"] != jb["random"]);
    CHECK(ja["numpy"] != jb["numpy"]);
    CHECK(ja["uuid"] != jb["uuid"]);
}

TEST_CASE("a forked kernel's exit code and death by signal read as an exec'd kernel's") {
    zygote_fixture z;
    jailed_kernel exits("import sys; sys.exit(3)");
    const pid_t p1 = z.fork(exits.what, exits.kernel.get());
    CHECK(z.wait_exit(p1).exit_code == 3);

    jailed_kernel killed("import os, signal; os.kill(os.getpid(), signal.SIGKILL)");
    const pid_t p2 = z.fork(killed.what, killed.kernel.get());
    const auto st = z.wait_exit(p2);
    CHECK(st.signal == SIGKILL);
    CHECK_FALSE(z.client->owns(p2));
}

TEST_CASE("terminate: SIGTERM reaches the kernel through the jail's pid 1, SIGKILL after grace") {
    zygote_fixture z;
    jailed_kernel polite("import time; time.sleep(120)");
    jailed_kernel stubborn(R"(
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open("armed", "w").close()
time.sleep(120)
)",
                           test_uid + 2);
    const pid_t p1 = z.fork(polite.what, polite.kernel.get());
    const pid_t p2 = z.fork(stubborn.what, stubborn.kernel.get());
    REQUIRE(
        eventually([&] { return std::filesystem::exists(stubborn.workdir->path() / "armed"); }));
    CHECK(z.client->terminate(p1, 30s));
    CHECK(z.wait_exit(p1).signal == SIGTERM);
    CHECK(z.client->terminate(p2, 300ms));
    CHECK(z.wait_exit(p2).signal == SIGKILL);
    CHECK_FALSE(z.client->terminate(p2, 1s));  // gone: not the zygote's to signal any more
}

TEST_CASE("a fork whose jail cannot be built is refused with the reason; the zygote goes on") {
    zygote_fixture z;
    jailed_kernel broken("pass");
    broken.what.zygote->layout->workdir = "/nonexistent/workdir";
    try {
        z.fork(broken.what);
        FAIL("forked");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find("/nonexistent/workdir") != std::string::npos);
    }
    jailed_kernel fine("open('ok', 'w').close()");
    const pid_t pid = z.fork(fine.what, fine.kernel.get());
    CHECK(z.wait_exit(pid).exit_code == 0);
    CHECK(std::filesystem::exists(fine.workdir->path() / "ok"));
}

TEST_CASE("a fork still setting up does not hold up the next one") {
    zygote_fixture z;
    open_temp_dir dir;
    std::ofstream(dir.path() / "probe.py") << "pass";
    auto order = [&](std::vector<std::filesystem::path> procs_files) {
        spawn_description what;
        what.argv = {"/usr/bin/python3", "-m", "probe"};
        what.env = {{"PATH", "/usr/bin"}};
        what.cgroup_procs_files = std::move(procs_files);
        what.zygote = zygote_fork{"zt", what.argv, dir.path(), std::nullopt};
        return what;
    };
    // A "cgroup.procs" that is a FIFO nobody reads: the first fork's setup stops there, in
    // open(2), until the test opens the other end.
    const auto fifo = dir.path() / "cgroup.procs";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto stuck = std::async(std::launch::async, [&] { return z.fork(order({fifo})); });
    CHECK(stuck.wait_for(300ms) == std::future_status::timeout);

    const pid_t next = z.fork(order({}));
    CHECK(z.wait_exit(next).exit_code == 0);
    CHECK(stuck.wait_for(0s) == std::future_status::timeout);

    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    REQUIRE(reader >= 0);
    REQUIRE(stuck.wait_for(60s) == std::future_status::ready);
    CHECK(z.wait_exit(stuck.get()).exit_code == 0);
    ::close(reader);
}

TEST_CASE("an unsandboxed fork runs in its own directory with its own environment") {
    zygote_fixture z;
    open_temp_dir dir;
    std::ofstream(dir.path() / "probe.py")
        << "import os, json; json.dump({'cwd': os.getcwd(), 'marker': os.environ.get('MARK'), "
           "'parent': os.environ.get('JPY_PARENT_PID')}, open('out.json', 'w'))";
    spawn_description what;
    what.argv = {"/usr/bin/python3", "-m", "probe"};
    what.env = {{"PATH", "/usr/bin"}, {"MARK", "m1"}, {"JPY_PARENT_PID", "1"}};
    what.zygote = zygote_fork{"zt", what.argv, dir.path(), std::nullopt};
    const pid_t pid = z.fork(what);
    CHECK(z.wait_exit(pid).exit_code == 0);
    const auto out = nlohmann::json::parse(read_file(dir.path() / "out.json"));
    CHECK(out["cwd"] == dir.path().string());
    CHECK(out["marker"] == "m1");
    CHECK(out["parent"].is_null());  // the kernel's parent is the zygote, not the gateway
}

TEST_CASE("when the zygote dies its kernels are reported killed, and it says it has gone") {
    zygote_fixture z;
    jailed_kernel k("import time; time.sleep(120)");
    const pid_t pid = z.fork(k.what, k.kernel.get());
    ::kill(z.client->pid(), SIGKILL);
    const auto st = z.wait_exit(pid);
    CHECK(st.signal == SIGKILL);
    CHECK(st.describe().find("zygote") != std::string::npos);
    REQUIRE(eventually([&] { return z.client->gone(); }));
    // The jail went with it: its pid 1 had the zygote's death as its own.
    CHECK(eventually([&] { return ::kill(pid, 0) != 0; }));
    CHECK_THROWS_AS(z.fork(k.what), std::runtime_error);
}

TEST_CASE("a kernel that takes the zygote's prebuilt IPython shell has it as its own") {
    // The zygote's Python side, played by a Python process (tests/launcher/python): history,
    // profile, home, In/Out and __main__ are each kernel's, and a kernel configured for the
    // shell builds its own. Real ipykernels, driven by jupyter_client.
    const std::string command = std::string(CALLISTO_TEST_PYTHON) + " " + CALLISTO_SOURCE_DIR +
                                "/tests/launcher/python/test_zygote_shell.py " +
                                CALLISTO_SOURCE_DIR;
    CHECK(std::system(command.c_str()) == 0);
}
