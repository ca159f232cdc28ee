#include "launcher/kernelspec/kernelspec_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "launcher/kernelspec/interpreter_environment.hpp"
#include "launcher/kernelspec/kernel_command.hpp"
#include "launcher/process/brief_command.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"
#include "launcher/sandbox/sandbox_probe.hpp"

namespace callisto::launcher {

namespace fs = std::filesystem;

namespace {

// Finds the module as `python -m` would, without importing it (ipykernel takes a second).
constexpr const char* find_module_code =
    "import importlib.util, sys\n"
    "try:\n"
    "    found = importlib.util.find_spec(sys.argv[1]) is not None\n"
    "except Exception as e:\n"
    "    print(e)\n"
    "    found = False\n"
    "sys.exit(0 if found else 3)\n";
constexpr int module_missing = 3;
constexpr std::size_t said_limit = 600;

std::string mode_text(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

// What a command wrote, on one line, its end kept when it is long (a traceback ends with the
// error).
std::string said(std::string output) {
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    for (char& c : output)
        if (c == '\n' || c == '\r') c = ' ';
    if (output.size() > said_limit) output = "..." + output.substr(output.size() - said_limit);
    return output;
}

// The kernel's command as kernel_command builds it: argv[0] with {resource_dir} substituted,
// and the environment a kernel gets (the kernelspec's env included: PYTHONPATH, say).
spawn_description command_of(const kernelspec& spec) {
    return kernel_command(spec, "/dev/null", "/");
}

std::string static_problem(const spawn_description& command, bool sandboxed,
                           const std::vector<fs::path>& private_paths,
                           interpreter_environment& env) {
    try {
        const auto path = command.env.find("PATH");
        env = find_interpreter_environment(
            command.argv.front(), sandboxed ? std::string(sandbox_search_path)
                                            : (path == command.env.end() ? "" : path->second));
    } catch (const std::exception& e) {
        return e.what();
    }
    if (!sandboxed) {
        if (::access(env.interpreter.c_str(), X_OK) != 0)
            return env.interpreter.string() +
                   " cannot be run by this process: " + std::strerror(errno);
        return {};
    }
    for (const auto& path : env.sandbox_paths) {
        if (auto why = sandbox_probe::unreachable_by_sandbox(path, "the environment"); !why.empty())
            return why;
        for (const auto& own : private_paths) {
            const auto mine = fs::absolute(own).lexically_normal();
            if (path_within(mine, path))
                return "the environment " + path.string() + " would show the gateway's own " +
                       mine.string() + " to every kernel: move the environment";
            if (path_within(path, mine))
                return "the environment " + path.string() + " lies inside the gateway's own " +
                       mine.string() + ", which is no place for it: move the environment";
        }
    }
    for (const auto& dir : {env.interpreter.parent_path(), env.real_interpreter.parent_path()})
        if (auto why = sandbox_probe::unreachable_by_sandbox(dir, "the interpreter's directory");
            !why.empty())
            return why;
    struct stat st {};
    if (::stat(env.real_interpreter.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0)
        return env.interpreter.string() + " (mode " + mode_text(st.st_mode) +
               ") cannot be run by other users, so kernels, which run as the sandbox uids, could "
               "not start it; chmod o+rx it";
    if (env.venv) {
        const auto cfg = env.prefix / "pyvenv.cfg";
        if (::stat(cfg.c_str(), &st) != 0 || (st.st_mode & S_IROTH) == 0)
            return cfg.string() + " (mode " + mode_text(st.st_mode) +
                   ") cannot be read by other users: the kernels' Python would not know it runs "
                   "in a venv; chmod o+r it";
    }
    return {};
}

}  // namespace

std::string kernelspec_static_problem(const kernelspec& spec, bool sandboxed,
                                      const std::vector<fs::path>& private_paths) {
    interpreter_environment env;
    return static_problem(command_of(spec), sandboxed, private_paths, env);
}

std::string kernelspec_problem(const kernelspec& spec, const kernelspec_check_settings& settings) {
    auto command = command_of(spec);
    interpreter_environment env;
    if (auto why = static_problem(command, settings.box != nullptr, settings.private_paths, env);
        !why.empty())
        return why;
    // Only `python -m module` is tried: any other program's way of saying "I run" is unknown.
    if (spec.argv.size() < 3 || spec.argv[1] != "-m") return {};
    const auto& module = spec.argv[2];
    const std::vector<std::string> argv{env.interpreter.string(), "-c", find_module_code, module};
    command.env.erase("JPY_PARENT_PID");
    spawn_description trial;
    if (settings.box) {
        trial = settings.box->trial(argv, env.sandbox_paths, settings.who, command.env);
    } else {
        trial.argv = argv;
        trial.env = command.env;
        trial.cwd = "/";
    }
    const std::string where = settings.box ? " in the sandbox" : "";
    brief_result result;
    try {
        result = run_brief_command(trial, settings.timeout);
    } catch (const std::exception& e) {
        return "could not try " + env.interpreter.string() + where + ": " + e.what();
    }
    if (result.succeeded()) return {};
    const auto output = said(result.output);
    if (!result.timed_out && result.signal == 0 && result.exit_code == module_missing)
        return env.interpreter.string() + " finds no module " + module + where +
               (output.empty() ? "" : " (" + output + ")") +
               ": install the package that provides it into the environment";
    return env.interpreter.string() + " does not run" + where + ": it " + result.describe() +
           (output.empty() ? "" : ": " + output);
}

}  // namespace callisto::launcher
