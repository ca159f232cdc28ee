#pragma once
// A gateway start after a crash or an upgrade: the kernels the previous gateway process left
// running (--state-dir) are taken over instead of reaped. In three steps, around the start:
//   1. (constructor) read the records; keep those whose process still runs (same pid, start
//      time and uid), drop the others' records (the reaper then takes what they left);
//   2. (before the leftover reaper) move their runtime directories into the new runtime root
//      (ipc sockets keep working after a rename), and tell the reaper what to spare;
//   3. (once the kernel manager exists) adopt each: it answers kernel_info with its recorded
//      key, or it is killed and its leftovers removed.

#include <filesystem>
#include <string>
#include <vector>

#include "common/logger.hpp"
#include "gateway/kernels/lifecycle/kernel_manager.hpp"
#include "gateway/kernels/records/kernel_record_store.hpp"
#include "launcher/sandbox/leftover_reaper.hpp"
#include "launcher/sandbox/sandbox_uid_pool.hpp"

namespace callisto::gateway {

// The rules of an adopted kernel's recorded egress that the server's ceiling as it is now
// (--egress-allow) still covers; a rule beyond it (the admin narrowed the ceiling across the
// restart) or unreadable goes to `dropped`. The kernel keeps running with what is left: its
// proxy refuses the rest with a 403, as for any destination not listed.
std::vector<std::string> egress_within_ceiling(const std::vector<std::string>& recorded,
                                               const std::vector<std::string>& ceiling,
                                               std::vector<std::string>& dropped);

class kernel_adoption {
public:
    kernel_adoption(kernels::kernel_record_store& records, logger log);

    std::size_t candidates() const { return found_.size(); }

    // Moves each candidate's runtime directory below `runtime_root` (already created); a
    // candidate whose directory cannot be moved is dropped.
    void move_runtime_dirs(const std::filesystem::path& runtime_root);
    // What the reaper must leave alone: the candidates' uids, cgroups, workdirs.
    void spare_in(launcher::leftover_scope& scope) const;
    // Hands every candidate to the kernel manager, their uids reserved in `uids` (null: no
    // sandbox), each one's egress narrowed to `egress_ceiling` (egress_within_ceiling); the
    // outcome of each is logged.
    void adopt_into(kernels::kernel_manager& kernels, launcher::sandbox_uid_pool* uids,
                    const std::vector<std::string>& egress_ceiling);

private:
    // Kills a candidate that will not be adopted (when it is still the recorded process) and
    // forgets its record; the reaper removes what it leaves.
    void drop(const kernels::kernel_record& record, const std::string& why);

    kernels::kernel_record_store& records_;
    logger log_;
    std::vector<kernels::kernel_record> found_;
};

}  // namespace callisto::gateway
