#pragma once
// The resource limits of one sandboxed kernel, with the defaults a shared host can afford.
// Set globally by gateway flags; a kernelspec may override them in kernel.json:
//   "metadata": {"callisto": {"limits": {"memory": "4GiB", "pids": 512, "cpu": 2, ...}}}

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace callisto::launcher {

struct sandbox_policy {
    std::uint64_t memory_bytes = 2ull << 30;     // cgroup memory limit (no swap)
    std::uint64_t pids = 256;                    // cgroup pids.max and RLIMIT_NPROC
    double cpu_cores = 1.0;                      // cgroup CPU bandwidth, in cores
    std::uint64_t cpu_time_seconds = 600;        // RLIMIT_CPU per process: SIGXCPU, then SIGKILL
    std::uint64_t file_size_bytes = 1ull << 30;  // RLIMIT_FSIZE: one file
    std::uint64_t open_files = 1024;             // RLIMIT_NOFILE
    std::uint64_t disk_bytes = 1ull << 30;       // the workdir's total size
    std::uint64_t tmp_bytes = 256ull << 20;      // /tmp and /dev/shm, each

    // Returns a copy with the fields named in `limits` replaced. Sizes are numbers of bytes or
    // strings like "512MiB". Throws std::invalid_argument naming the bad field.
    sandbox_policy with_overrides(const nlohmann::json& limits) const;

    // "memory 2GiB, pids 256, cpu 1 core, ..." for logs.
    std::string describe() const;
};

}  // namespace callisto::launcher
