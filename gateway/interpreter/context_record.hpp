#pragma once
// What a gateway writes down about each interpreter context (--state-dir) so that the next
// gateway process, having adopted the context's kernel, brings the context back under the
// same id: its owner, kernel, policy and workdir, and its executions (finished ones as
// summaries; one queued or running at a crash is reported as ended by the restart).

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_record_store.hpp"
#include "common/logger.hpp"
#include "gateway/kernels/lifecycle/kernel_policy.hpp"

namespace callisto::gateway::interpreter {

struct context_record {
    std::string id;
    std::string owner;
    std::string kernel_id;
    kernels::kernel_policy policy = kernels::kernel_policy::reuse;
    std::size_t kernel_uses = 1;
    std::filesystem::path workdir;
    bool chdir_kernel = false;
    // An E2B sandbox's: brought back, its sandbox takes it again (e2b_api::restore), or it is
    // closed. Absent in older records.
    bool via_e2b = false;
    // context_options' start_dir and home (E2B's /home/user), for the kernel's restarts after
    // the restore. Absent in older records: empty.
    std::string start_dir;
    std::string home;
    // context_options' shares_files_of (an E2B sandbox's second context: the default one's),
    // so that the files stay the sandbox's after the restore. Absent in older records: empty.
    std::string shares_files_of;
    std::string created_at;                               // ISO 8601, as the model shows it
    nlohmann::json executions = nlohmann::json::array();  // execution::to_record(), oldest first

    nlohmann::json to_json() const;
    // Throws std::invalid_argument saying what is missing or malformed.
    static context_record from_json(const nlohmann::json& j);
};

// <state-dir>/contexts: one record per context, rewritten as its executions come and go
// (atomically, without fsync: a record outlives a gateway crash, which is what it is for; a
// machine crash takes the kernels with it anyway).
class context_record_store : public json_record_store<context_record> {
public:
    context_record_store(std::filesystem::path dir, logger log)
        : json_record_store(std::move(dir), "context", record_directory::sync::never,
                            std::move(log)) {}
};

}  // namespace callisto::gateway::interpreter
