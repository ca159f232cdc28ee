#include "launcher/sandbox/sandbox_layout.hpp"

#include <stdexcept>

namespace callisto::launcher {

namespace {

constexpr const char* etc_files[] = {
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/mime.types",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates.conf",
    "/etc/fonts",
    "/etc/matplotlibrc",
    "/etc/alternatives",
    "/etc/host.conf",
    "/etc/R",
};

constexpr const char* usr_symlinks[] = {"bin", "sbin", "lib", "lib64", "lib32", "libx32"};

std::string string_field(const nlohmann::json& j, const char* name) {
    const auto it = j.find(name);
    if (it == j.end() || !it->is_string())
        throw std::invalid_argument(std::string("sandbox layout: '") + name + "' must be a string");
    return it->get<std::string>();
}

nlohmann::json environment_strings(const std::vector<std::filesystem::path>& paths) {
    auto out = nlohmann::json::array();
    for (const auto& p : paths) out.push_back(p.string());
    return out;
}

// Each is bound at <new root>/<path>: a ".." or a relative path would reach outside that root.
std::filesystem::path environment_path(const nlohmann::json& item) {
    if (!item.is_string())
        throw std::invalid_argument("sandbox layout: 'environment' must be a list of strings");
    const std::filesystem::path path = item.get<std::string>();
    // lexically_normal() takes every ".." and "." out of an absolute path: a path equal to its
    // normal form has none. It keeps a leading "//", which POSIX leaves undefined.
    const auto& text = item.get_ref<const std::string&>();
    if (!path.is_absolute() || path != path.lexically_normal() || !path.has_relative_path() ||
        !path.has_filename() || text.find('\0') != std::string::npos ||
        text.find("//") != std::string::npos)
        throw std::invalid_argument("sandbox layout: environment path " + item.dump() +
                                    " is not an absolute, normal path below /");
    return path;
}

}  // namespace

std::span<const char* const> sandbox_etc_files() { return etc_files; }
std::span<const char* const> sandbox_usr_symlinks() { return usr_symlinks; }

nlohmann::json sandbox_layout::to_json() const {
    return {{"workdir", workdir.string()},
            {"runtime_dir", runtime_dir.string()},
            {"passwd_file", passwd_file.string()},
            {"group_file", group_file.string()},
            {"tmp_bytes", tmp_bytes},
            {"environment", environment_strings(environment)}};
}

sandbox_layout sandbox_layout::from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw std::invalid_argument("sandbox layout: not an object");
    sandbox_layout out;
    out.workdir = string_field(j, "workdir");
    out.runtime_dir = string_field(j, "runtime_dir");
    out.passwd_file = string_field(j, "passwd_file");
    out.group_file = string_field(j, "group_file");
    const auto size = j.find("tmp_bytes");
    if (size == j.end() || !size->is_number_unsigned())
        throw std::invalid_argument("sandbox layout: 'tmp_bytes' must be a whole number");
    out.tmp_bytes = size->get<std::uint64_t>();
    if (const auto env = j.find("environment"); env != j.end()) {
        if (!env->is_array())
            throw std::invalid_argument("sandbox layout: 'environment' must be a list of strings");
        for (const auto& item : *env) out.environment.push_back(environment_path(item));
    }
    for (const auto* path : {&out.workdir, &out.runtime_dir, &out.passwd_file, &out.group_file})
        if (!path->is_absolute())
            throw std::invalid_argument("sandbox layout: '" + path->string() +
                                        "' is not an absolute path");
    return out;
}

}  // namespace callisto::launcher
