// pyvenv.cfg, and where a kernelspec's interpreter lives: what the sandbox must show of it.

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "launcher/kernelspec/interpreter_environment.hpp"
#include "tests/launcher/test_support.hpp"

using namespace callisto::launcher;
using callisto::launcher::test::temp_dir;
using callisto::launcher::test::write_file;
namespace fs = std::filesystem;

namespace {

using paths = std::vector<fs::path>;

std::string parse_error(const std::string& text) {
    try {
        parse_pyvenv_cfg(text);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

std::string find_error(const std::string& program, const std::string& search_path = "/usr/bin") {
    try {
        find_interpreter_environment(program, search_path);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

// `python3 -m venv --without-pip DIR` made by hand: bin/python3 a link to the system Python.
fs::path make_venv(const fs::path& dir, const std::string& cfg) {
    fs::create_directories(dir / "bin");
    fs::create_directory_symlink("lib", dir / "lib64");
    fs::create_directories(dir / "lib" / "python3.11" / "site-packages");
    fs::create_symlink("/usr/bin/python3", dir / "bin" / "python3");
    write_file(dir / "pyvenv.cfg", cfg);
    return dir / "bin" / "python3";
}

// A copy of the system Python at `file` (only its place matters), its directories made.
fs::path python_copy(const fs::path& file) {
    fs::create_directories(file.parent_path());
    fs::copy_file("/usr/bin/python3", file);
    return file;
}

// A symbolic link at `file` to `target`, its directories made.
fs::path link_at(const fs::path& file, const fs::path& target) {
    fs::create_directories(file.parent_path());
    fs::create_symlink(target, file);
    return file;
}

const std::string system_venv_cfg =
    "home = /usr/bin\n"
    "include-system-site-packages = false\n"
    "version = 3.11.2\n"
    "executable = /usr/bin/python3.11\n"
    "command = /usr/bin/python3 -m venv --without-pip /opt/envs/ds\n";

}  // namespace

TEST_CASE("pyvenv.cfg as python3 -m venv writes it is read whole") {
    const auto cfg = parse_pyvenv_cfg(system_venv_cfg);
    CHECK(cfg.home == "/usr/bin");
    CHECK_FALSE(cfg.include_system_site_packages);
    CHECK(cfg.version == "3.11.2");
    CHECK(cfg.executable == "/usr/bin/python3.11");
    CHECK(parse_pyvenv_cfg("home = /usr/bin\ninclude-system-site-packages = true\n")
              .include_system_site_packages);
}

TEST_CASE("pyvenv.cfg is read as CPython reads it: keys in any case, other lines ignored") {
    const auto cfg = parse_pyvenv_cfg(
        "# made by hand\r\n"
        "  HOME=/opt/python3.12/bin  \r\n"
        "Include-System-Site-Packages = TRUE\r\n"
        "prompt = (ds)\r\n"
        "not a setting\r\n"
        "home = /usr/bin");  // the last one wins, and no newline at the end
    CHECK(cfg.home == "/usr/bin");
    CHECK(cfg.include_system_site_packages);
    CHECK(cfg.executable.empty());
    CHECK(cfg.version.empty());
}

TEST_CASE("pyvenv.cfg without a usable home, or with a setting CPython would misread, is refused") {
    CHECK(parse_error("").find("no \"home = DIR\" line") != std::string::npos);
    CHECK(parse_error("version = 3.11.2\n").find("no \"home = DIR\" line") != std::string::npos);
    CHECK(parse_error("home\n").find("no \"home = DIR\" line") != std::string::npos);
    CHECK(parse_error("version = 3.11\nhome =\n") == "line 2: home is empty");
    CHECK(parse_error("home = usr/bin\n") == "line 1: home \"usr/bin\" is not an absolute path");
    CHECK(parse_error("home = /usr/bin\ninclude-system-site-packages = yes\n") ==
          "line 2: include-system-site-packages is \"yes\", not true or false");
    CHECK(parse_error("home = /usr/bin\ninclude-system-site-packages =\n") ==
          "line 2: include-system-site-packages is \"\", not true or false");
    CHECK(parse_error("home = /usr/bin\nexecutable = python3\n") ==
          "line 2: executable \"python3\" is not an absolute path");
    CHECK(parse_error(std::string("home = /usr/b\0in\n", 16)) == "line 1: home holds a NUL byte");
}

TEST_CASE("a venv over the system Python needs only the venv in the sandbox") {
    temp_dir tmp;
    const auto python = make_venv(tmp.path() / "ds", system_venv_cfg);
    const auto env = find_interpreter_environment(python.string(), "/usr/bin");
    CHECK(env.interpreter == python);
    CHECK(env.real_interpreter == fs::canonical("/usr/bin/python3"));
    CHECK(env.base_interpreter == fs::canonical("/usr/bin/python3.11"));
    CHECK(env.prefix == tmp.path() / "ds");
    REQUIRE(env.venv);
    CHECK(env.venv->home == "/usr/bin");
    CHECK(env.sandbox_paths == paths{tmp.path() / "ds"});
    // Through its other names, and with a trailing separator or a dot on the way.
    CHECK(find_interpreter_environment((tmp.path() / "ds" / "bin" / "." / "python3").string(), "")
              .prefix == tmp.path() / "ds");
    CHECK(find_interpreter_environment(
              (tmp.path() / "ds" / "lib64" / ".." / "bin" / "python3").string(), "")
              .sandbox_paths == paths{tmp.path() / "ds"});
}

TEST_CASE("a venv without an executable line runs on the Python its links end at") {
    temp_dir tmp;
    const auto python = make_venv(tmp.path() / "old", "home = /usr/bin\n");
    const auto env = find_interpreter_environment(python.string(), "");
    REQUIRE(env.venv);
    CHECK(env.base_interpreter == fs::canonical("/usr/bin/python3"));
}

TEST_CASE("pyvenv.cfg beside the interpreter marks a venv too, as CPython looks there first") {
    temp_dir tmp;
    fs::create_directories(tmp.path() / "flat");
    fs::create_symlink("/usr/bin/python3", tmp.path() / "flat" / "python3");
    write_file(tmp.path() / "flat" / "pyvenv.cfg", "home = /usr/bin\n");
    const auto env = find_interpreter_environment((tmp.path() / "flat" / "python3").string(), "");
    REQUIRE(env.venv);
    CHECK(env.prefix == tmp.path() / "flat");
    CHECK(env.sandbox_paths == paths{tmp.path() / "flat"});
}

TEST_CASE("a venv over a Python outside /usr needs that Python's prefix too") {
    temp_dir tmp;
    // A Python of its own under <tmp>/py312 (a copy: only its place matters here).
    const auto base = python_copy(tmp.path() / "py312" / "bin" / "python3.12");
    const auto python = link_at(tmp.path() / "envs" / "ml" / "bin" / "python3", base);
    write_file(tmp.path() / "envs" / "ml" / "pyvenv.cfg", "home = " + base.parent_path().string() +
                                                              "\nexecutable = " + base.string() +
                                                              "\nversion = 3.12.1\n");
    const auto env = find_interpreter_environment(python.string(), "");
    CHECK(env.base_interpreter == base);
    CHECK(env.venv->version == "3.12.1");
    CHECK(env.sandbox_paths == paths{tmp.path() / "envs" / "ml", tmp.path() / "py312"});
}

TEST_CASE("a venv inside its base Python's prefix is shown once, with that prefix") {
    temp_dir tmp;
    const auto base = python_copy(tmp.path() / "py" / "bin" / "python3");
    const auto python = link_at(tmp.path() / "py" / "envs" / "a" / "bin" / "python3", base);
    write_file(tmp.path() / "py" / "envs" / "a" / "pyvenv.cfg",
               "home = " + base.parent_path().string() + "\n");
    CHECK(find_interpreter_environment(python.string(), "").sandbox_paths ==
          paths{tmp.path() / "py"});
}

TEST_CASE("a conda-like prefix with its own interpreter is not a venv; its prefix is shown") {
    temp_dir tmp;
    const auto python = python_copy(tmp.path() / "conda" / "bin" / "python3.11");
    fs::create_symlink("python3.11", tmp.path() / "conda" / "bin" / "python3");
    const auto env =
        find_interpreter_environment((tmp.path() / "conda" / "bin" / "python3").string(), "");
    CHECK_FALSE(env.venv);
    CHECK(env.prefix == tmp.path() / "conda");
    CHECK(env.real_interpreter == python);
    CHECK(env.base_interpreter == python);
    CHECK(env.sandbox_paths == paths{tmp.path() / "conda"});
}

TEST_CASE("a link into another prefix shows both prefixes; a link into /usr only its own") {
    temp_dir tmp;
    const auto real = python_copy(tmp.path() / "b" / "bin" / "python3");
    link_at(tmp.path() / "a" / "bin" / "python3", real);
    CHECK(find_interpreter_environment((tmp.path() / "a" / "bin" / "python3").string(), "")
              .sandbox_paths == paths{tmp.path() / "a", tmp.path() / "b"});

    link_at(tmp.path() / "farm" / "bin" / "python3", "/usr/bin/python3");
    const auto farm =
        find_interpreter_environment((tmp.path() / "farm" / "bin" / "python3").string(), "");
    CHECK_FALSE(farm.venv);
    CHECK(farm.base_interpreter == fs::canonical("/usr/bin/python3"));
    CHECK(farm.sandbox_paths == paths{tmp.path() / "farm"});
}

TEST_CASE("a program outside a bin directory has its own directory as its prefix") {
    temp_dir tmp;
    const auto script = tmp.path() / "kernels" / "wrapped" / "run.sh";
    write_file(script, "#!/bin/sh\n");
    CHECK(find_interpreter_environment(script.string(), "").sandbox_paths ==
          paths{tmp.path() / "kernels" / "wrapped"});
}

TEST_CASE("the system interpreter needs nothing beyond /usr, by any of its names") {
    CHECK(find_interpreter_environment("/usr/bin/python3", "").sandbox_paths.empty());
    CHECK(find_interpreter_environment("python3", "/nonexistent:relative:/usr/bin").interpreter ==
          "/usr/bin/python3");
    if (fs::is_symlink("/bin")) {
        const auto env = find_interpreter_environment("/bin/python3", "");
        CHECK(env.sandbox_paths.empty());
        CHECK(env.prefix == "/");  // by name; /usr in fact
    }
}

TEST_CASE("an interpreter that is missing, relative, not a file or not found is refused") {
    temp_dir tmp;
    CHECK(find_error("") == "argv[0] is empty");
    CHECK(find_error("bin/python3") ==
          "argv[0] \"bin/python3\" is a relative path: give an absolute path, or a name found "
          "on PATH");
    CHECK(find_error((tmp.path() / "gone" / "bin" / "python3").string()) ==
          (tmp.path() / "gone" / "bin" / "python3").string() + ": No such file or directory");
    CHECK(find_error(tmp.path().string()) == tmp.path().string() + " is not a file");
    CHECK(find_error("no-such-python-here", "/usr/bin:/bin") ==
          "\"no-such-python-here\" is not found on the search path /usr/bin:/bin");
    CHECK(find_error("python3", "") == "\"python3\" is not found on the search path ");
}

TEST_CASE("a venv whose pyvenv.cfg is bad, or whose base Python is gone, is refused by name") {
    temp_dir tmp;
    const auto bad =
        make_venv(tmp.path() / "bad", "home = /usr/bin\ninclude-system-site-packages = 1\n");
    CHECK(find_error(bad.string()) == (tmp.path() / "bad" / "pyvenv.cfg").string() +
                                          ": line 2: include-system-site-packages is \"1\", not "
                                          "true or false");
    const auto orphan = make_venv(tmp.path() / "orphan", "home = " + (tmp.path() / "py").string());
    CHECK(find_error(orphan.string()) ==
          (tmp.path() / "orphan" / "pyvenv.cfg").string() + ": home " +
              (tmp.path() / "py").string() +
              " is not a directory: the Python this venv was made from is gone; make the venv "
              "again");
    const auto huge = make_venv(tmp.path() / "huge", "home = /usr/bin\n" + std::string(70000, '#'));
    CHECK(find_error(huge.string()) ==
          (tmp.path() / "huge" / "pyvenv.cfg").string() + " is larger than 65536 bytes");
}

TEST_CASE("a prefix the sandbox cannot show on its own is refused, saying why") {
    // Right under /: the sandbox would show all of /tmp.
    const auto loose = fs::path("/tmp") / ("cl-loose-python-" + std::to_string(::getpid()));
    fs::create_symlink("/usr/bin/python3", loose);
    const auto why = find_error(loose.string());
    fs::remove(loose);
    CHECK(why == "the prefix /tmp of " + loose.string() +
                     " is / or a directory right under it, which the sandbox would show whole: "
                     "give the environment a directory of its own, such as /opt/envs/NAME");
    // Where the sandbox mounts its own file systems.
    CHECK(find_error("/proc/self/exe") ==
          "the prefix /proc/self of /proc/self/exe is under /proc, where the sandbox mounts its "
          "own; move the environment");
}

TEST_CASE("what every sandbox shows already: /usr, and the links into it") {
    CHECK(in_every_sandbox("/usr"));
    CHECK(in_every_sandbox("/usr/local/lib/python3.11"));
    CHECK_FALSE(in_every_sandbox("/usrx/bin"));
    CHECK_FALSE(in_every_sandbox("/opt/conda"));
    CHECK_FALSE(in_every_sandbox("/"));
    CHECK_FALSE(in_every_sandbox("/tmp"));
    CHECK(in_every_sandbox("/bin/sh") == fs::is_symlink("/bin"));
}
