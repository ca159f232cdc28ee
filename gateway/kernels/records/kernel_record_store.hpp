#pragma once
// The kernel records of --state-dir (<dir>/<kernel id>.json), written durably (fsync) when a
// kernel starts running or changes owner, removed when it ends: what a gateway reads back at
// start to adopt the kernels an earlier one left running.
//
// A full disk (or any write error) never stops a kernel: its record is missing, so it is not
// adoptable, and the error is logged once and counted until a write succeeds again.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/logger.hpp"
#include "common/record_directory.hpp"
#include "gateway/kernels/records/kernel_record.hpp"

namespace callisto::gateway::kernels {

class kernel_record_store {
public:
    // Creates the directory (0700). Throws std::runtime_error when it cannot.
    kernel_record_store(std::filesystem::path dir, logger log);

    const std::filesystem::path& dir() const { return records_.dir(); }

    // "" when written, else why not. Thread-safe (one file per kernel).
    [[nodiscard]] std::string save(const kernel_record& record) {
        return records_.save(record.id, record.to_json().dump());
    }
    void remove(const std::string& kernel_id) { records_.remove(kernel_id); }
    std::uint64_t failed_writes() const { return records_.failed_writes(); }

    struct loaded {
        std::vector<kernel_record> records;
        std::vector<std::string> problems;  // unreadable files (removed)
    };
    loaded load();

    // Whether the record's process is still the one it names: the same pid and start time,
    // and, sandboxed, the same uid. "" or why not.
    [[nodiscard]] static std::string still_running(const kernel_record& record);
    // SIGKILLs the record's process and its process group (an unsandboxed kernel's children;
    // a sandboxed one's are in its cgroup) while it is still that process, and waits up to 2 s
    // for it to go.
    static void kill_recorded_process(const kernel_record& record);

private:
    record_directory records_;
};

}  // namespace callisto::gateway::kernels
