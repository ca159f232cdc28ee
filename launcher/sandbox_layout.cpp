#include "launcher/sandbox_layout.hpp"

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

}  // namespace

std::span<const char* const> sandbox_etc_files() { return etc_files; }
std::span<const char* const> sandbox_usr_symlinks() { return usr_symlinks; }

nlohmann::json sandbox_layout::to_json() const {
    return {{"workdir", workdir.string()},
            {"runtime_dir", runtime_dir.string()},
            {"passwd_file", passwd_file.string()},
            {"group_file", group_file.string()},
            {"tmp_bytes", tmp_bytes}};
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
    for (const auto* path : {&out.workdir, &out.runtime_dir, &out.passwd_file, &out.group_file})
        if (!path->is_absolute())
            throw std::invalid_argument("sandbox layout: '" + path->string() +
                                        "' is not an absolute path");
    return out;
}

}  // namespace callisto::launcher
