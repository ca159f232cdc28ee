#pragma once
// Where a kernelspec's interpreter lives, found from its argv[0] alone, so that an admin adds
// an environment by writing the kernelspec `python -m ipykernel install` writes, and nothing
// else. The sandbox binds what it finds read-only at the same paths; the zygote pool tells a
// venv over the Python it embeds from another Python.
//
//   a venv (`python3 -m venv DIR`): DIR/bin/python3, with DIR/pyvenv.cfg naming the directory
//     of the Python it was made from (`home`): the sandbox shows DIR and that Python's prefix
//   any other prefix (conda, a Python built into /opt/python3.12): PREFIX/bin/python3: the
//     sandbox shows PREFIX, and the prefix of the file its symlinks end at
//
// What lies under /usr (and /bin, /lib, ... where they are links into it) is in every sandbox
// already.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace callisto::launcher {

struct pyvenv_config {
    std::filesystem::path home;  // the directory of the Python the venv was made from
    bool include_system_site_packages = false;
    std::string version;               // as written; may be empty
    std::filesystem::path executable;  // that Python itself (3.11 writes it); may be empty
};

// Reads pyvenv.cfg as CPython does (`key = value` lines, keys in any case, other lines and
// keys ignored), but refuses what CPython would misread without a word: no `home`, a relative
// `home` or `executable`, an include-system-site-packages that is not true or false. Throws
// std::invalid_argument naming the line.
pyvenv_config parse_pyvenv_cfg(std::string_view text);

struct interpreter_environment {
    std::filesystem::path interpreter;       // absolute, as the kernel runs it (links kept)
    std::filesystem::path real_interpreter;  // where its symlinks end
    std::filesystem::path prefix;            // the venv, or the interpreter's prefix
    std::optional<pyvenv_config> venv;       // set when `prefix` is a venv
    // The Python a venv was made from (its `executable`, else where the venv's own
    // interpreter's links end), symlinks resolved; real_interpreter when not a venv.
    std::filesystem::path base_interpreter;
    // What the sandbox binds read-only beyond /usr: absolute, none inside another, sorted.
    std::vector<std::filesystem::path> sandbox_paths;
};

// `program` is argv[0] with {resource_dir} substituted; a name without a '/' is looked up on
// `search_path` (PATH syntax), as execvp would. Throws std::runtime_error saying what is
// missing or why its prefix cannot be shown to a sandbox: a directory right under / (the
// whole /opt or /home would be), or one of the sandbox's own mounts (/proc, /sys, /dev, the
// workdir).
interpreter_environment find_interpreter_environment(const std::string& program,
                                                     const std::string& search_path);

// `path` is `dir` or lies below it, compared part by part ("/opt/envs" is not within "/opt/e");
// both absolute and normal.
bool path_within(const std::filesystem::path& path, const std::filesystem::path& dir);

// True when `path` (absolute) is in every sandbox already: under /usr, or under /bin, /lib
// and the others where the host links them into /usr (the sandbox repeats those links).
bool in_every_sandbox(const std::filesystem::path& path);

}  // namespace callisto::launcher
