#include "launcher/kernelspec/interpreter_environment.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "launcher/sandbox/sandbox_layout.hpp"

namespace callisto::launcher {

namespace fs = std::filesystem;

namespace {

// CPython reads a few hundred bytes; anything this large is not a pyvenv.cfg.
constexpr std::size_t max_pyvenv_cfg_bytes = 64 * 1024;

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Lexically normal, without a trailing separator ("/opt/env/" is "/opt/env").
fs::path normal(const fs::path& p) {
    auto n = p.lexically_normal();
    if (!n.has_filename() && n != n.root_path()) n = n.parent_path();
    return n;
}

// A program's prefix: PREFIX for PREFIX/bin/program, else the program's own directory (a
// wrapper script in a kernelspec's resource directory, say).
fs::path prefix_of(const fs::path& program) {
    const auto dir = program.parent_path();
    const auto name = dir.filename();
    return name == "bin" || name == "sbin" ? dir.parent_path() : dir;
}

fs::path found_on(const std::string& name, const std::string& search_path) {
    std::size_t start = 0;
    while (start <= search_path.size()) {
        auto end = search_path.find(':', start);
        if (end == std::string::npos) end = search_path.size();
        const fs::path dir = search_path.substr(start, end - start);
        start = end + 1;
        if (!dir.is_absolute()) continue;
        const auto candidate = normal(dir / name);
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return candidate;
    }
    throw std::runtime_error("\"" + name + "\" is not found on the search path " + search_path);
}

std::optional<fs::path> canonical_or_none(const fs::path& p) {
    std::error_code ec;
    auto real = fs::canonical(p, ec);
    if (ec) return std::nullopt;
    return real;
}

// Where CPython looks for a venv's marker: beside the interpreter, then one level up.
std::optional<fs::path> pyvenv_cfg_of(const fs::path& interpreter) {
    for (const auto& dir : {interpreter.parent_path(), interpreter.parent_path().parent_path()}) {
        const auto cfg = dir / "pyvenv.cfg";
        struct stat st {};
        if (::stat(cfg.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return cfg;
    }
    return std::nullopt;
}

pyvenv_config read_pyvenv_cfg(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error(file.string() + " cannot be read");
    std::string text(max_pyvenv_cfg_bytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (in.bad()) throw std::runtime_error(file.string() + " cannot be read");
    if (text.size() > max_pyvenv_cfg_bytes)
        throw std::runtime_error(file.string() + " is larger than " +
                                 std::to_string(max_pyvenv_cfg_bytes) + " bytes");
    try {
        return parse_pyvenv_cfg(text);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(file.string() + ": " + e.what());
    }
}

// A path the sandbox may bind: not the whole of a directory right under /, and not where
// the sandbox mounts its own file systems.
void check_bindable(const fs::path& path, const fs::path& interpreter) {
    const auto about = "the prefix " + path.string() + " of " + interpreter.string();
    if (std::distance(path.begin(), path.end()) < 3)
        throw std::runtime_error(about +
                                 " is / or a directory right under it, which the sandbox would "
                                 "show whole: give the environment a directory of its own, such "
                                 "as /opt/envs/NAME");
    for (const fs::path own : {"/proc", "/sys", "/dev", sandbox_workdir})
        if (path_within(path, own))
            throw std::runtime_error(about + " is under " + own.string() +
                                     ", where the sandbox mounts its own; move the environment");
}

}  // namespace

bool path_within(const fs::path& path, const fs::path& dir) {
    auto at = path.begin();
    for (const auto& part : dir) {
        if (at == path.end() || *at != part) return false;
        ++at;
    }
    return true;
}

pyvenv_config parse_pyvenv_cfg(std::string_view text) {
    pyvenv_config cfg;
    bool have_home = false;
    std::size_t number = 0;
    for (std::size_t at = 0; at <= text.size();) {
        auto end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        const auto line = text.substr(at, end - at);
        at = end + 1;
        ++number;
        const auto eq = line.find('=');
        if (eq == std::string_view::npos) continue;  // CPython skips it
        const auto key = lower(trim(line.substr(0, eq)));
        const auto value = std::string(trim(line.substr(eq + 1)));
        auto bad = [&](const std::string& what) {
            throw std::invalid_argument("line " + std::to_string(number) + ": " + what);
        };
        if (value.find('\0') != std::string::npos) bad(key + " holds a NUL byte");
        if (key == "home") {
            if (value.empty()) bad("home is empty");
            if (value.front() != '/') bad("home \"" + value + "\" is not an absolute path");
            cfg.home = value;
            have_home = true;
        } else if (key == "include-system-site-packages") {
            const auto flag = lower(value);
            if (flag != "true" && flag != "false")
                bad("include-system-site-packages is \"" + value + "\", not true or false");
            cfg.include_system_site_packages = flag == "true";
        } else if (key == "version") {
            cfg.version = value;
        } else if (key == "executable") {
            if (!value.empty() && value.front() != '/')
                bad("executable \"" + value + "\" is not an absolute path");
            cfg.executable = value;
        }
    }
    if (!have_home)
        throw std::invalid_argument(
            "no \"home = DIR\" line (the directory of the Python the venv was made from)");
    return cfg;
}

bool in_every_sandbox(const fs::path& path) {
    const auto p = normal(path);
    if (path_within(p, "/usr")) return true;
    if (std::distance(p.begin(), p.end()) < 2) return false;
    const auto top = *std::next(p.begin());
    for (const char* link : sandbox_usr_symlinks()) {
        if (top != link) continue;
        struct stat st {};
        const auto host = fs::path("/") / link;
        return ::lstat(host.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
    }
    return false;
}

interpreter_environment find_interpreter_environment(const std::string& program,
                                                     const std::string& search_path) {
    if (program.empty()) throw std::runtime_error("argv[0] is empty");
    interpreter_environment env;
    if (program.find('/') == std::string::npos)
        env.interpreter = found_on(program, search_path);
    else if (program.front() != '/')
        throw std::runtime_error("argv[0] \"" + program +
                                 "\" is a relative path: give an absolute path, or a name found "
                                 "on PATH");
    else
        env.interpreter = normal(program);

    struct stat st {};
    if (::stat(env.interpreter.c_str(), &st) != 0)
        throw std::runtime_error(env.interpreter.string() + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw std::runtime_error(env.interpreter.string() + " is not a file");
    auto real = canonical_or_none(env.interpreter);
    if (!real)
        throw std::runtime_error(env.interpreter.string() + ": its links cannot be resolved");
    env.real_interpreter = *real;
    env.base_interpreter = env.real_interpreter;

    // The prefix of each program the interpreter runs as or on, unless the program is in
    // every sandbox already (/bin/python3's prefix is / by name, and /usr in fact).
    std::vector<fs::path> wanted;
    auto want_prefix_of = [&](const fs::path& runs) {
        if (!in_every_sandbox(runs)) wanted.push_back(prefix_of(runs));
    };
    if (const auto cfg_file = pyvenv_cfg_of(env.interpreter)) {
        env.venv = read_pyvenv_cfg(*cfg_file);
        env.prefix = cfg_file->parent_path();
        wanted.push_back(env.prefix);
        const auto home = normal(env.venv->home);
        std::error_code ec;
        if (!fs::is_directory(home, ec))
            throw std::runtime_error(
                cfg_file->string() + ": home " + home.string() +
                " is not a directory: the Python this venv was made from is gone; make the "
                "venv again");
        // The Python the venv runs on: its standard library is found from `home`.
        want_prefix_of(home / "python3");
        if (auto real_home = canonical_or_none(home)) want_prefix_of(*real_home / "python3");
        if (!env.venv->executable.empty()) {
            const auto base = normal(env.venv->executable);
            if (auto real_base = canonical_or_none(base)) {
                env.base_interpreter = *real_base;
                want_prefix_of(base);
                want_prefix_of(*real_base);
            }
        }
    } else {
        env.prefix = prefix_of(env.interpreter);
        want_prefix_of(env.interpreter);
    }
    want_prefix_of(env.real_interpreter);

    for (auto& path : wanted) path = normal(path);
    std::sort(wanted.begin(), wanted.end());
    for (const auto& path : wanted) {
        if (in_every_sandbox(path)) continue;
        // Sorted element by element: a directory comes right before what lies inside it.
        if (!env.sandbox_paths.empty() && path_within(path, env.sandbox_paths.back())) continue;
        check_bindable(path, env.interpreter);
        env.sandbox_paths.push_back(path);
    }
    return env;
}

}  // namespace callisto::launcher
