#pragma once
// What a sandboxed kernel sees of the file system, as data: the host paths bound into it and
// the sizes of its scratch mounts. Two builders read it, so both sandboxes show the kernel the
// same world: bwrap's command line (sandbox.cpp) and the zygote's in-process jail
// (zygote/kernel_jail.cpp).

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace callisto::launcher {

// Where things are inside the sandbox.
inline constexpr const char* sandbox_workdir = "/work";
// E2B's home and working directory: the workdir bound a second time, so code and paths
// written for E2B's sandboxes find their files and os.getcwd() there says /home/user
// (docs/e2b.md). A link would resolve to /work.
inline constexpr const char* sandbox_home = "/home/user";
// The runtime directory again, at a path that names nothing of the host: the kernel's command
// line (its /proc/self/cmdline, and bwrap's /proc/1/cmdline) names its files there.
inline constexpr const char* sandbox_runtime_dir = "/run/kernel";
inline constexpr const char* sandbox_hostname = "kernel";
// The kernel's PATH: where a kernelspec's argv[0] without a '/' is found inside.
inline constexpr const char* sandbox_search_path = "/usr/local/bin:/usr/bin:/bin";

struct sandbox_layout {
    std::filesystem::path workdir;      // bound read-write at sandbox_workdir and sandbox_home
    std::filesystem::path runtime_dir;  // bound read-write at its host path (ipc sockets) and
                                        // at sandbox_runtime_dir
    std::filesystem::path passwd_file;  // bound read-only at /etc/passwd
    std::filesystem::path group_file;   // bound read-only at /etc/group
    std::uint64_t tmp_bytes = 0;        // size of /tmp and of /dev/shm, each
    // The kernelspec's environment beyond /usr (interpreter_environment::sandbox_paths), each
    // bound read-only at its host path, after /tmp: a venv under /tmp shows inside /tmp.
    std::vector<std::filesystem::path> environment = {};

    nlohmann::json to_json() const;
    // Throws std::invalid_argument naming the field that is missing or not a string/number,
    // or an environment path that is not absolute and normal ("/opt/env", never "/opt/../x").
    static sandbox_layout from_json(const nlohmann::json& j);
};

// Read-only host files a Python kernel needs, bound when they exist: the dynamic loader's
// cache, name service and time zone, TLS roots, fonts, matplotlib's defaults and R's site
// configuration (R reads /etc/R through /usr/lib/R/etc's links).
std::span<const char* const> sandbox_etc_files();

// Debian's usrmerge: /bin, /lib, ... are symlinks into /usr; the sandbox repeats the ones the
// host has.
std::span<const char* const> sandbox_usr_symlinks();

}  // namespace callisto::launcher
