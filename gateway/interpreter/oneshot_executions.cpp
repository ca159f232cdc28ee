#include "gateway/interpreter/oneshot_executions.hpp"

#include <algorithm>

namespace callisto::gateway::interpreter {

namespace {
std::string key_of(const std::string& owner, const std::string& key) { return owner + '\n' + key; }
}  // namespace

oneshot_executions::key_claim oneshot_executions::claim_key(const std::string& owner,
                                                            const std::string& key) {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = keys_.try_emplace(key_of(owner, key), std::string{});
    if (inserted) return {key_state::free, nullptr};
    if (it->second.empty()) return {key_state::reserved, nullptr};
    auto e = by_id_.find(it->second);
    if (e == by_id_.end()) {  // forgotten: the key is free again
        it->second.clear();
        return {key_state::free, nullptr};
    }
    return {key_state::known, e->second.value.exec};
}

void oneshot_executions::release_key(const std::string& owner, const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = keys_.find(key_of(owner, key));
    if (it != keys_.end() && it->second.empty()) keys_.erase(it);
}

void oneshot_executions::add(const std::string& owner, const std::shared_ptr<execution>& e,
                             const std::shared_ptr<interpreter_context>& context) {
    std::lock_guard lock(mutex_);
    by_id_[e->id()] = {owner, {e, context}};
    order_.push_back(e->id());
    if (const auto& key = e->request().idempotency_key; !key.empty())
        keys_[key_of(owner, key)] = e->id();
    std::size_t mine = 0;
    for (const auto& id : order_)
        if (auto it = by_id_.find(id); it != by_id_.end() && it->second.owner == owner) ++mine;
    if (mine > max_per_owner_) {
        // This owner's oldest goes.
        auto at = std::find_if(order_.begin(), order_.end(), [&](const std::string& id) {
            auto it = by_id_.find(id);
            return it != by_id_.end() && it->second.owner == owner;
        });
        forget_locked(at);
    }
    while (order_.size() > max_kept_) forget_locked(order_.begin());
}

void oneshot_executions::forget_locked(std::deque<std::string>::iterator at) {
    if (at == order_.end()) return;
    if (auto it = by_id_.find(*at); it != by_id_.end()) {
        if (const auto& key = it->second.value.exec->request().idempotency_key; !key.empty())
            keys_.erase(key_of(it->second.owner, key));
        by_id_.erase(it);
    }
    order_.erase(at);
}

std::optional<oneshot_executions::entry> oneshot_executions::find_for(const std::string& id,
                                                                      const user& who) const {
    std::lock_guard lock(mutex_);
    auto it = by_id_.find(id);
    if (it == by_id_.end() || !who.may_use(it->second.owner)) return std::nullopt;
    return it->second.value;
}

}  // namespace callisto::gateway::interpreter
