#include "gateway/e2b/process_table.hpp"

#include "gateway/e2b/sandbox_process.hpp"

namespace callisto::gateway::e2b {

void process_table::add(const std::string& sandbox_id, std::shared_ptr<sandbox_process> process) {
    std::lock_guard lock(mutex_);
    const auto pid = process->pid();
    by_sandbox_[sandbox_id][pid] = std::move(process);
}

void process_table::remove(const std::string& sandbox_id, std::uint32_t pid) {
    std::lock_guard lock(mutex_);
    auto it = by_sandbox_.find(sandbox_id);
    if (it == by_sandbox_.end()) return;
    it->second.erase(pid);
    if (it->second.empty()) by_sandbox_.erase(it);
}

std::shared_ptr<sandbox_process> process_table::find(const std::string& sandbox_id,
                                                     const process_selector& selector) const {
    std::lock_guard lock(mutex_);
    auto it = by_sandbox_.find(sandbox_id);
    if (it == by_sandbox_.end()) return nullptr;
    if (selector.pid) {
        auto p = it->second.find(*selector.pid);
        return p == it->second.end() ? nullptr : p->second;
    }
    for (const auto& [pid, process] : it->second)
        if (selector.tag && process->config().tag == selector.tag) return process;
    return nullptr;
}

std::vector<std::shared_ptr<sandbox_process>> process_table::list(
    const std::string& sandbox_id) const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<sandbox_process>> out;
    if (auto it = by_sandbox_.find(sandbox_id); it != by_sandbox_.end())
        for (const auto& [pid, process] : it->second) out.push_back(process);
    return out;
}

std::size_t process_table::count(const std::string& sandbox_id) const {
    std::lock_guard lock(mutex_);
    auto it = by_sandbox_.find(sandbox_id);
    return it == by_sandbox_.end() ? 0 : it->second.size();
}

std::vector<std::shared_ptr<sandbox_process>> process_table::take(const std::string& sandbox_id) {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<sandbox_process>> out;
    if (auto it = by_sandbox_.find(sandbox_id); it != by_sandbox_.end()) {
        for (auto& [pid, process] : it->second) out.push_back(std::move(process));
        by_sandbox_.erase(it);
    }
    return out;
}

}  // namespace callisto::gateway::e2b
