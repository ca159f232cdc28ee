#include "launcher/kernelspec/kernel_command.hpp"

#include <unistd.h>
#include <cstdlib>
#include <string_view>

namespace callisto::launcher {

namespace {

// The only host variables a kernel sees: enough to find programs and pick a locale, nothing
// that could carry the gateway's secrets (tokens, cloud credentials) into user code.
constexpr const char* passed_through[] = {"PATH", "LANG", "LC_ALL", "TZ", "HOME"};
constexpr const char* default_path = "/usr/local/bin:/usr/bin:/bin";

void replace_all(std::string& s, std::string_view from, const std::string& to) {
    for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
}

}  // namespace

spawn_description kernel_command(const kernelspec& spec,
                                 const std::filesystem::path& connection_file,
                                 const std::filesystem::path& cwd,
                                 const std::map<std::string, std::string>& extra_env) {
    const auto connection = connection_file.string();
    const auto resources = spec.resource_dir.string();
    auto substitute = [&](std::string s) {
        replace_all(s, "{connection_file}", connection);
        replace_all(s, "{resource_dir}", resources);
        return s;
    };

    spawn_description what;
    what.cwd = cwd;
    what.argv.reserve(spec.argv.size());
    for (const auto& arg : spec.argv) what.argv.push_back(substitute(arg));

    for (const char* name : passed_through)
        if (const char* value = std::getenv(name)) what.env[name] = value;
    if (!what.env.contains("PATH")) what.env["PATH"] = default_path;

    // jupyter_client sets this so ipykernel's ParentPollerUnix can exit when the gateway dies.
    what.env["JPY_PARENT_PID"] = std::to_string(::getpid());

    for (const auto& [key, value] : spec.env) what.env[key] = substitute(value);
    for (const auto& [key, value] : extra_env) what.env[key] = value;
    return what;
}

}  // namespace callisto::launcher
