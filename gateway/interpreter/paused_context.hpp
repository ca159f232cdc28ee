#pragma once
// Paused contexts (issue 37): a context whose state was saved as a snapshot of its own and
// whose kernel was shut down. It keeps its id and owner and is listed as "paused"; its next
// execution, or POST /v1/contexts/{id}/resume, brings it back into a fresh kernel.
//
// paused_record is what is known of one (written to <state-dir>/paused, so a paused context
// outlives a gateway restart and a host reboot); paused_table is the state machine the
// registry runs them through: paused -> resuming -> (live again | paused, on a failure), with
// every request that arrives while a resume runs joining it, so a context resumes once.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_record_store.hpp"
#include "common/logger.hpp"
#include "gateway/kernels/lifecycle/kernel_policy.hpp"

namespace callisto::gateway::interpreter {

struct paused_record {
    std::string id;
    std::string owner;
    std::string kernel;                      // its kernelspec: the one it resumes into
    std::vector<std::string> network_allow;  // the egress it was given, asked for again
    kernels::kernel_policy policy = kernels::kernel_policy::reuse;
    std::string snapshot_id;  // in the paused contexts' own store
    std::string created_at;   // ISO 8601: the context's, kept across pauses
    std::string paused_at;

    nlohmann::json to_json() const;
    // Every field, of its type, and none other (a record is only ever written by a gateway:
    // one with a field it does not know is not one it wrote). Throws std::invalid_argument
    // saying what is wrong.
    static paused_record from_json(const nlohmann::json& j);
    // What GET /v1/contexts shows of it, in the shape of a live context's model, with
    // "expires_at" (null when `ttl` is 0: kept for ever).
    nlohmann::json model(const std::vector<std::string>& languages, bool resuming,
                         std::chrono::seconds ttl = std::chrono::seconds(0)) const;
    // When it is deleted: paused_at + ttl; none when ttl is 0 (or paused_at does not parse,
    // which from_json never lets in).
    std::optional<std::chrono::system_clock::time_point> expires_at(std::chrono::seconds ttl) const;
};

// <state-dir>/paused: one record per paused context, synced to disk (it must outlive a host
// reboot, as the snapshot it names does).
class paused_record_store : public json_record_store<paused_record> {
public:
    paused_record_store(std::filesystem::path dir, logger log)
        : json_record_store(std::move(dir), "paused context", record_directory::sync::on_save,
                            std::move(log)) {}

    // Every record, but those unreadable and those whose snapshot `snapshot_exists` did not
    // find: each removed and said in `problems`.
    loaded load(const std::function<bool(const paused_record&)>& snapshot_exists);
};

// The paused contexts of a registry. Not thread-safe: the registry calls it under its lock.
class paused_table {
public:
    // How a resume ended, told once to each who asked: status 0 when the context is live
    // again, else the error's HTTP status, why, and the Retry-After to send ("" for none).
    struct outcome {
        int status = 0;
        std::string error;
        std::string retry_after;
        std::int64_t duration_ms = 0;
    };
    using waiter = std::function<void(const outcome&)>;

    enum class resume_start { begin, joined, unknown };

    // false when the id is already there.
    bool add(paused_record record);
    const paused_record* find(const std::string& id) const;
    bool resuming(const std::string& id) const;
    std::vector<const paused_record*> all() const;
    std::size_t size() const { return entries_.size(); }

    // begin: the caller runs the resume and calls finish(); joined: one runs already, `w` is
    // told when it ends; unknown: no such paused context.
    resume_start start_resume(const std::string& id, waiter w);
    // The resume ended: on success the entry goes; on failure it is paused again, so the next
    // request tries again. The waiters to tell (outside the caller's lock).
    std::vector<waiter> finish_resume(const std::string& id, bool ok);

    // The paused contexts whose expires_at(ttl) is not after `now`, but not one resuming (it
    // is about to be live). None when ttl is 0.
    std::vector<std::string> expired(std::chrono::system_clock::time_point now,
                                     std::chrono::seconds ttl) const;

    enum class remove_result { removed, resuming, unknown };
    // A resume in flight is not removed under it: the caller answers 409.
    remove_result remove(const std::string& id, paused_record* removed = nullptr);

private:
    struct entry {
        paused_record record;
        bool resuming = false;
        std::vector<waiter> waiters;
    };
    std::map<std::string, entry> entries_;
};

}  // namespace callisto::gateway::interpreter
