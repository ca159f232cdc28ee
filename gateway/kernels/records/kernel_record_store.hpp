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

#include "common/json_record_store.hpp"
#include "common/logger.hpp"
#include "gateway/kernels/records/kernel_record.hpp"

namespace callisto::gateway::kernels {

class kernel_record_store : public json_record_store<kernel_record> {
public:
    // Creates the directory (0700). Throws std::runtime_error when it cannot.
    kernel_record_store(std::filesystem::path dir, logger log)
        : json_record_store(std::move(dir), "kernel", record_directory::sync::on_save,
                            std::move(log)) {}

    // Whether the record's process is still the one it names: the same pid and start time,
    // and, sandboxed, the same uid. "" or why not.
    [[nodiscard]] static std::string still_running(const kernel_record& record);
    // SIGKILLs the record's process and its process group (an unsandboxed kernel's children;
    // a sandboxed one's are in its cgroup) while it is still that process, and waits up to 2 s
    // for it to go.
    static void kill_recorded_process(const kernel_record& record);
};

}  // namespace callisto::gateway::kernels
