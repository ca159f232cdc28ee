// The part of the start-up check of a kernelspec that needs no process: its interpreter found,
// reachable and runnable by the sandbox uids, its environment clear of the gateway's files.
// Trying the interpreter in a sandbox is in kernelspec_trial_tests.cpp (integration).

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "launcher/kernelspec/kernelspec_check.hpp"
#include "tests/launcher/test_support.hpp"

using namespace callisto::launcher;
using callisto::launcher::test::env_override;
using callisto::launcher::test::temp_dir;
using callisto::launcher::test::write_file;
namespace fs = std::filesystem;

namespace {

// A temp dir the sandbox uids may search (mkdtemp makes it 0700).
struct open_dir : temp_dir {
    open_dir() { ::chmod(path().c_str(), 0755); }
};

kernelspec spec_running(const std::string& program) {
    kernelspec spec;
    spec.name = "env";
    spec.argv = {program, "-m", "ipykernel_launcher", "-f", "{connection_file}"};
    return spec;
}

fs::path make_venv(const fs::path& dir) {
    fs::create_directories(dir / "bin");
    fs::create_symlink("/usr/bin/python3", dir / "bin" / "python3");
    write_file(dir / "pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = true\n");
    return dir / "bin" / "python3";
}

std::string sandboxed_problem(const std::string& program, const std::vector<fs::path>& own = {}) {
    return kernelspec_static_problem(spec_running(program), true, own);
}

}  // namespace

TEST_CASE("a venv every sandbox uid can reach passes, as does the system Python") {
    open_dir tmp;
    const auto python = make_venv(tmp.path() / "ds");
    CHECK(sandboxed_problem(python.string()) == "");
    CHECK(sandboxed_problem("/usr/bin/python3") == "");
    CHECK(sandboxed_problem("python3") == "");
    CHECK(kernelspec_static_problem(spec_running(python.string()), false, {}) == "");
}

TEST_CASE("a missing interpreter is refused, saying which file is missing") {
    open_dir tmp;
    const auto gone = (tmp.path() / "gone" / "bin" / "python3").string();
    CHECK(sandboxed_problem(gone) == gone + ": No such file or directory");
    CHECK(kernelspec_static_problem(spec_running(gone), false, {}) ==
          gone + ": No such file or directory");
}

TEST_CASE("an environment behind a directory others cannot search is refused, naming it") {
    open_dir tmp;
    const auto python = make_venv(tmp.path() / "private" / "ds");
    ::chmod((tmp.path() / "private").c_str(), 0700);
    const auto why = sandboxed_problem(python.string());
    INFO(why);
    CHECK(why.find("the environment " + (tmp.path() / "private" / "ds").string() + ": " +
                   (tmp.path() / "private").string() +
                   " (mode 0700) is not searchable by other users") == 0);
    // Unsandboxed, the kernel runs as this process, which may.
    CHECK(kernelspec_static_problem(spec_running(python.string()), false, {}) == "");
}

TEST_CASE("an interpreter the sandbox uids may not run is refused, with its mode") {
    open_dir tmp;
    const auto python = tmp.path() / "conda" / "bin" / "python3";
    fs::create_directories(python.parent_path());
    fs::copy_file("/usr/bin/python3", python);
    ::chmod(python.c_str(), 0700);
    CHECK(sandboxed_problem(python.string()) ==
          python.string() +
              " (mode 0700) cannot be run by other users, so kernels, which run as the sandbox "
              "uids, could not start it; chmod o+rx it");
    ::chmod(python.c_str(), 0644);  // nobody may: unsandboxed, this process may not either
    CHECK(kernelspec_static_problem(spec_running(python.string()), false, {}) ==
          python.string() + " cannot be run by this process: Permission denied");
    ::chmod(python.c_str(), 0755);
    CHECK(sandboxed_problem(python.string()) == "");
}

TEST_CASE("a venv whose pyvenv.cfg the sandbox uids cannot read is refused") {
    open_dir tmp;
    const auto python = make_venv(tmp.path() / "ds");
    ::chmod((tmp.path() / "ds" / "pyvenv.cfg").c_str(), 0600);
    CHECK(sandboxed_problem(python.string()) ==
          (tmp.path() / "ds" / "pyvenv.cfg").string() +
              " (mode 0600) cannot be read by other users: the kernels' Python would not know it "
              "runs in a venv; chmod o+r it");
}

TEST_CASE("an environment holding, or inside, one of the gateway's own paths is refused") {
    open_dir tmp;
    const auto python = make_venv(tmp.path() / "ds");
    const auto holds = sandboxed_problem(python.string(), {tmp.path() / "ds" / "state"});
    CHECK(holds == "the environment " + (tmp.path() / "ds").string() +
                       " would show the gateway's own " + (tmp.path() / "ds" / "state").string() +
                       " to every kernel: move the environment");
    const auto inside = sandboxed_problem(python.string(), {tmp.path()});
    CHECK(inside == "the environment " + (tmp.path() / "ds").string() +
                        " lies inside the gateway's own " + tmp.path().string() +
                        ", which is no place for it: move the environment");
    CHECK(sandboxed_problem(python.string(), {tmp.path() / "elsewhere", "/var/lib/x"}) == "");
}

TEST_CASE("a bare name is looked up on the sandbox's PATH, not the gateway's") {
    open_dir tmp;
    write_file(tmp.path() / "bin" / "only-here-python", "#!/bin/sh\n");
    ::chmod((tmp.path() / "bin" / "only-here-python").c_str(), 0755);
    env_override path("PATH", (tmp.path() / "bin").string() + ":/usr/bin");
    CHECK(sandboxed_problem("only-here-python") ==
          "\"only-here-python\" is not found on the search path /usr/local/bin:/usr/bin:/bin");
    CHECK(kernelspec_static_problem(spec_running("only-here-python"), false, {}) == "");
}

TEST_CASE("argv[0] in the kernelspec's own directory ({resource_dir}) is found there") {
    open_dir tmp;
    auto spec = spec_running("{resource_dir}/run.sh");
    spec.resource_dir = tmp.path() / "kernels" / "wrapped";
    write_file(spec.resource_dir / "run.sh", "#!/bin/sh\n");
    ::chmod((spec.resource_dir / "run.sh").c_str(), 0755);
    ::chmod((tmp.path() / "kernels").c_str(), 0755);
    ::chmod(spec.resource_dir.c_str(), 0755);
    CHECK(kernelspec_static_problem(spec, true, {}) == "");
    fs::remove(spec.resource_dir / "run.sh");
    CHECK(kernelspec_static_problem(spec, true, {}) ==
          (spec.resource_dir / "run.sh").string() + ": No such file or directory");
}
