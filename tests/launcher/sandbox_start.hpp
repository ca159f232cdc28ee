#pragma once
// One sandboxed start as the gateway prepares it, for the sandbox's and the zygote's tests:
// a workdir, a runtime dir, and the sandboxed_kernel the sandbox made for a command (bwrap's
// command line, and the layout a zygote's fork builds instead).

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "launcher/process/kernel_runtime_dir.hpp"
#include "launcher/sandbox/sandbox.hpp"
#include "launcher/sandbox/sandboxed_kernel.hpp"
#include "launcher/sandbox/session_workdir.hpp"
#include "test_support.hpp"

namespace callisto::launcher::test {

// A temp dir the sandbox uid may traverse (mkdtemp makes it 0700).
struct open_temp_dir : temp_dir {
    open_temp_dir() { ::chmod(path().c_str(), 0755); }
};

// A venv as `python3 -m venv --without-pip DIR` makes it over the system Python (its
// interpreter a link to it, pyvenv.cfg naming /usr/bin), with `module` as envmod.py in its
// site-packages (mode 0666). Returns its interpreter.
inline std::filesystem::path make_venv(const std::filesystem::path& dir, const std::string& module,
                                       bool system_site = false) {
    namespace fs = std::filesystem;
    // lib/python3.11/site-packages, as the system Python names it.
    const auto version = fs::canonical("/usr/bin/python3").filename().string();
    fs::create_directories(dir / "bin");
    fs::create_symlink("/usr/bin/python3", dir / "bin" / "python3");
    write_file(dir / "pyvenv.cfg", std::string("home = /usr/bin\ninclude-system-site-packages = ") +
                                       (system_site ? "true" : "false") + "\n");
    const auto file = dir / "lib" / version / "site-packages" / "envmod.py";
    write_file(file, module);
    // Writable by anyone: only the sandbox's read-only mount keeps a kernel from changing it.
    ::chmod(file.c_str(), 0666);
    return dir / "bin" / "python3";
}

// Run with a venv of make_venv's as its interpreter, in the sandbox: writes to out.txt, as a
// JSON list, what the kernel sees of it: sys.prefix, sys.executable, envmod.WHERE, whether
// numpy (the system's, not the venv's) imports, and "written" or the errno name of a write to
// envmod.py.
inline constexpr const char* venv_probe = R"(
import errno, json, sys
import envmod
try:
    import numpy
    numpy_seen = True
except ImportError:
    numpy_seen = False
try:
    open(envmod.__file__, "a").write("x = 1\n")
    written = "written"
except OSError as e:
    written = errno.errorcode[e.errno]
json.dump([sys.prefix, sys.executable, envmod.WHERE, numpy_seen, written], open("out.txt", "w"))
)";

struct sandbox_start {
    open_temp_dir root;
    open_temp_dir runtime_root;
    std::unique_ptr<session_workdir> workdir;
    std::unique_ptr<kernel_runtime_dir> runtime;
    std::shared_ptr<sandboxed_kernel> kernel;

    // `inner` as kernel_command would build it; `tag` names the cgroup.
    sandbox_start(const spawn_description& inner, const sandbox_policy& policy, uid_t uid,
                  const std::string& tag) {
        sandbox box("/usr/bin/bwrap", cgroup_layout::detect());
        const sandbox_identity who{uid, uid};
        workdir = std::make_unique<session_workdir>(root.path(), "w", who, policy.disk_bytes);
        runtime = std::make_unique<kernel_runtime_dir>(runtime_root.path(), "r",
                                                       transport_kind::ipc, "t");
        kernel = box.prepare(inner, policy, who, workdir->path(), runtime->path(),
                             runtime->connection_file(),
                             box.make_cgroup(tag + "-" + std::to_string(::getpid()), policy));
    }
    std::string output(const std::string& file) const { return read_file(workdir->path() / file); }
};

}  // namespace callisto::launcher::test
