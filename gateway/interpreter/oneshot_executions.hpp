#pragma once
// One-shot executions by id, for GET and DELETE /v1/executions/{eid} after the context they
// ran in is gone, and their idempotency keys. Bounded: the oldest are forgotten first.
// Thread-safe.

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "gateway/interpreter/execution.hpp"
#include "gateway/interpreter/interpreter_context.hpp"
#include "gateway/user.hpp"

namespace callisto::gateway::interpreter {

class oneshot_executions {
public:
    // max_kept: all users together; max_per_owner: one user's flood must not push out the
    // others' results and idempotency keys.
    oneshot_executions(std::size_t max_kept, std::size_t max_per_owner)
        : max_kept_(max_kept), max_per_owner_(max_per_owner) {}

    enum class key_state { free, reserved, known };
    struct key_claim {
        key_state state;
        std::shared_ptr<execution> exec;  // known
    };
    // Claims an idempotency key of `owner` for a new run: free (now reserved for the caller,
    // who must add() or release_key()), reserved by a run still starting, or known.
    key_claim claim_key(const std::string& owner, const std::string& key);
    void release_key(const std::string& owner, const std::string& key);

    void add(const std::string& owner, const std::shared_ptr<execution>& e,
             const std::shared_ptr<interpreter_context>& context);

    struct entry {
        std::shared_ptr<execution> exec;
        std::weak_ptr<interpreter_context> context;  // expired once it ended
    };
    // Others' executions are answered as if they did not exist; admins see all.
    std::optional<entry> find_for(const std::string& id, const user& who) const;

private:
    struct record {
        std::string owner;
        entry value;
    };
    void forget_locked(std::deque<std::string>::iterator at);

    const std::size_t max_kept_;
    const std::size_t max_per_owner_;
    mutable std::mutex mutex_;
    std::map<std::string, record> by_id_;
    std::deque<std::string> order_;  // oldest first
    // owner + '\n' + key -> execution id; "" while reserved.
    std::map<std::string, std::string> keys_;
};

}  // namespace callisto::gateway::interpreter
