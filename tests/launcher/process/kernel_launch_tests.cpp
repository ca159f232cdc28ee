#include <doctest/doctest.h>

#include <sys/stat.h>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "launcher/kernelspec/ipykernel_bootstrap.hpp"
#include "launcher/kernelspec/kernel_command.hpp"
#include "launcher/kernelspec/kernelspec.hpp"
#include "launcher/process/kernel_runtime_dir.hpp"
#include "launcher/process/process_supervisor.hpp"
#include "tests/launcher/test_support.hpp"

using namespace std::chrono_literals;
using callisto::launcher::exit_status;
using callisto::launcher::kernel_command;
using callisto::launcher::kernel_runtime_dir;
using callisto::launcher::kernelspec;
using callisto::launcher::process_supervisor;
using callisto::launcher::transport_kind;
using callisto::launcher::test::eventually;
using callisto::launcher::test::temp_dir;

namespace {

bool is_unix_socket(const std::filesystem::path& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

TEST_CASE("a tcp runtime dir gets five distinct free loopback ports") {
    temp_dir tmp;
    kernel_runtime_dir dir(tmp.path(), "t1", transport_kind::tcp, "python3");
    const auto& c = dir.connection();
    CHECK(c.transport == "tcp");
    CHECK(c.ip == "127.0.0.1");
    const std::set<std::uint16_t> ports{c.shell_port, c.iopub_port, c.stdin_port, c.control_port,
                                        c.hb_port};
    CHECK(ports.size() == 5);
    CHECK_FALSE(ports.contains(0));
}

TEST_CASE("an ipykernel from the python3 kernelspec binds its ipc sockets and is terminated") {
    const std::filesystem::path spec_dir = "/usr/share/jupyter/kernels/python3";
    REQUIRE_MESSAGE(std::filesystem::exists(spec_dir / "kernel.json"),
                    "this test needs Debian's python3-ipykernel kernelspec");
    auto spec = kernelspec::load(spec_dir);
    spec.argv.front() = CALLISTO_TEST_PYTHON;  // the python3 first on PATH may lack ipykernel

    temp_dir root;
    temp_dir workdir;
    std::filesystem::path dir_path;

    std::mutex mutex;
    std::condition_variable changed;
    std::optional<exit_status> exited;
    {
        auto runtime =
            std::make_unique<kernel_runtime_dir>(root.path(), "k1", transport_kind::ipc, spec.name);
        dir_path = runtime->path();
        const auto what = kernel_command(spec, runtime->connection_file(), workdir.path());

        process_supervisor supervisor({});
        const pid_t pid = supervisor.spawn(what, [&](pid_t, exit_status status) {
            std::lock_guard lock(mutex);
            exited = status;
            changed.notify_all();
        });

        const bool sockets_up = eventually([&] {
            for (int port = 1; port <= 5; ++port)
                if (!is_unix_socket(dir_path / ("k-" + std::to_string(port)))) return false;
            return true;
        });
        {
            std::lock_guard lock(mutex);
            CAPTURE(exited ? exited->describe() : std::string("still running"));
            CHECK(sockets_up);
        }

        supervisor.terminate(pid, 10s);
        std::unique_lock lock(mutex);
        REQUIRE(changed.wait_for(lock, 20s, [&] { return exited.has_value(); }));
        lock.unlock();
        CHECK_FALSE(supervisor.running(pid));
        CHECK(::kill(pid, 0) != 0);

        runtime.reset();
        CHECK_FALSE(std::filesystem::exists(dir_path));
    }
    MESSAGE("ipykernel " << exited->describe());
}

TEST_CASE("the ipykernel bootstrap runs the module as -m would, with its iopub patch in place") {
    temp_dir workdir;
    // A user's file named like what the bootstrap imports must not stand in for it.
    callisto::launcher::test::write_file(workdir.path() / "zmq.py", "raise ImportError('mine')\n");
    callisto::launcher::test::write_file(workdir.path() / "ipykernel_probe.py", R"PY(
import json, os, sys
from ipykernel.kernelapp import IPKernelApp
json.dump({"name": __name__, "argv": sys.argv, "path0": sys.path[0],
           "patched": getattr(IPKernelApp.init_iopub, "_callisto", False)},
          open("probe.json", "w"))
)PY");
    callisto::launcher::spawn_description what;
    what.argv = {CALLISTO_TEST_PYTHON, "-m", "ipykernel_probe", "-f", "x.json"};
    what.cwd = workdir.path();
    what.env = {{"PATH", "/usr/bin:/bin"}, {"PYDEVD_DISABLE_FILE_VALIDATION", "1"}};
    temp_dir runtime;
    const auto booted = callisto::launcher::with_ipykernel_bootstrap(what, runtime.path());
    CHECK(booted.argv.size() == 7);
    CHECK(booted.argv[1] == "-c");
    CHECK(booted.argv[3] == (runtime.path() / "ipykernel_bootstrap.py").string());
    CHECK(booted.argv[4] == "ipykernel_probe");
    // `ps` shows the command line of every kernel: the bootstrap's 3 KB are in a file.
    for (const auto& arg : booted.argv) CHECK(arg.size() < 128);
    CHECK(std::filesystem::file_size(booted.argv[3]) > 1000);
    CHECK((std::filesystem::status(booted.argv[3]).permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
           std::filesystem::perms::others_read));

    std::mutex mutex;
    std::condition_variable changed;
    std::optional<exit_status> exited;
    process_supervisor supervisor({});
    supervisor.spawn(booted, [&](pid_t, exit_status status) {
        std::lock_guard lock(mutex);
        exited = status;
        changed.notify_all();
    });
    std::unique_lock lock(mutex);
    REQUIRE(changed.wait_for(lock, 60s, [&] { return exited.has_value(); }));
    CHECK(exited->describe() == "exited with code 0");
    const auto probe =
        nlohmann::json::parse(callisto::launcher::test::read_file(workdir.path() / "probe.json"));
    CHECK(probe["name"] == "__main__");
    CHECK(probe["argv"] == nlohmann::json::array(
                               {(workdir.path() / "ipykernel_probe.py").string(), "-f", "x.json"}));
    CHECK(probe["path0"] == workdir.path().string());  // the cwd first, as with -m
    CHECK(probe["patched"] == true);
}

TEST_CASE("the ipykernel bootstrap leaves every other command as it is") {
    callisto::launcher::spawn_description what;
    for (const auto& argv : std::vector<std::vector<std::string>>{
             {"/usr/bin/R", "--slave", "-e", "IRkernel::main()"},
             {"/usr/bin/python3", "-m", "my_kernel", "-f", "c.json"},
             {"/usr/bin/python3", "-m"}}) {
        what.argv = argv;
        temp_dir runtime;
        CHECK(callisto::launcher::with_ipykernel_bootstrap(what, runtime.path()).argv == argv);
        CHECK(std::filesystem::is_empty(runtime.path()));  // nothing written for them
    }
}
