#include "gateway/kernel_adoption.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "gateway/egress/egress_allowlist.hpp"

namespace callisto::gateway {

namespace fs = std::filesystem;

std::vector<std::string> egress_within_ceiling(const std::vector<std::string>& recorded,
                                               const std::vector<std::string>& ceiling,
                                               std::vector<std::string>& dropped) {
    const auto outer = egress::parse_rules(ceiling);
    std::vector<std::string> kept;
    for (const auto& text : recorded) {
        auto rule = egress::parse_rule(text);
        if (auto* r = std::get_if<egress::allow_rule>(&rule);
            r && egress::beyond({*r}, outer).empty())
            kept.push_back(text);
        else
            dropped.push_back(text);
    }
    return kept;
}

kernel_adoption::kernel_adoption(kernels::kernel_record_store& records, logger log)
    : records_(records), log_(std::move(log)) {
    auto loaded = records_.load();
    for (const auto& problem : loaded.problems)
        log_.warn("unreadable kernel record removed from " + records_.dir().string() + ": " +
                  problem);
    for (auto& record : loaded.records) {
        if (auto why = kernels::kernel_record_store::still_running(record); !why.empty()) {
            log_.info("kernel " + record.id + " of " + record.owner +
                      " ended while no gateway ran (" + why + "); its leftovers are reaped");
            records_.remove(record.id);
            continue;
        }
        if (record.owner.empty()) {
            // A warm-pool kernel nobody claimed: the new pool starts its own.
            drop(record, "a warm-pool kernel nobody had claimed");
            continue;
        }
        found_.push_back(std::move(record));
    }
}

void kernel_adoption::move_runtime_dirs(const fs::path& runtime_root) {
    std::vector<kernels::kernel_record> kept;
    for (auto& record : found_) {
        const auto target = runtime_root / record.runtime_dir.filename();
        if (record.runtime_dir != target) {
            if (std::rename(record.runtime_dir.c_str(), target.c_str()) != 0) {
                drop(record, "cannot move " + record.runtime_dir.string() + " to " +
                                 target.string() + ": " + std::strerror(errno));
                continue;
            }
            record.runtime_dir = target;
            // The kernel bound its ipc sockets by path; the sockets moved with the directory.
            if (record.connection.transport == "ipc")
                record.connection.ip =
                    (target / fs::path(record.connection.ip).filename()).string();
            // Where it is now, should this process die before the kernel answers. A failure is
            // the store's to log: the record is written again once the kernel answers.
            static_cast<void>(records_.save(record));
        }
        kept.push_back(std::move(record));
    }
    found_ = std::move(kept);
}

void kernel_adoption::drop(const kernels::kernel_record& record, const std::string& why) {
    log_.warn("kernel " + record.id + " of " + record.owner + " is not adopted (" + why +
              "); it is stopped");
    // Its group too: an unsandboxed kernel's children are there (a sandboxed one's are in
    // its cgroup, which the reaper empties).
    kernels::kernel_record_store::kill_recorded_process(record);
    records_.remove(record.id);
}

void kernel_adoption::spare_in(launcher::leftover_scope& scope) const {
    for (const auto& record : found_) {
        if (!record.uid) continue;
        scope.adopted_uids.insert(*record.uid);
        if (!record.cgroup.empty()) scope.adopted_cgroups.insert(record.cgroup);
        scope.adopted_workdirs.insert(record.workdir.filename().string());
    }
}

void kernel_adoption::adopt_into(kernels::kernel_manager& kernels, launcher::sandbox_uid_pool* uids,
                                 const std::vector<std::string>& egress_ceiling) {
    // Held now, before any other kernel starts and could take one of them.
    if (uids)
        for (const auto& record : found_)
            if (record.uid) uids->reserve(*record.uid);
    // A kernel that ran in another's sandbox comes after it: it shares that one's again.
    std::stable_partition(found_.begin(), found_.end(), [](const kernels::kernel_record& r) {
        return r.sandbox_owner().empty();
    });
    for (auto& record : found_) {
        if (!record.egress_allow.empty()) {
            std::vector<std::string> dropped;
            record.egress_allow =
                egress_within_ceiling(record.egress_allow, egress_ceiling, dropped);
            std::string names;
            for (const auto& d : dropped) names += (names.empty() ? "" : ", ") + d;
            if (!dropped.empty())
                log_.warn("kernel " + record.id + " of " + record.owner +
                          " loses the egress rules --egress-allow no longer covers: " + names);
        }
        const std::string id = record.id;
        const std::string owner = record.owner;
        kernels.adopt(std::move(record),
                      [log = log_, id, owner](const kernels::create_kernel_result& result) {
                          if (result.kernel)
                              log.info("kernel " + id + " of " + owner +
                                       " adopted: it kept running through the gateway restart");
                          else
                              log.warn("kernel " + id + " of " + owner +
                                       " could not be adopted: " + result.message);
                      });
    }
    found_.clear();
}

}  // namespace callisto::gateway
