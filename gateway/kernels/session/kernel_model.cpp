#include "gateway/kernels/session/kernel_model.hpp"

#include "kernelproto/iso_time.hpp"
#include "launcher/process/process_memory.hpp"

namespace callisto::gateway::kernels {

std::string_view to_string(kernel_holder holder) {
    switch (holder) {
        case kernel_holder::client: return "client";
        case kernel_holder::context: return "context";
        case kernel_holder::mcp: return "mcp";
        case kernel_holder::keep: return "keep";
    }
    return "client";
}

kernel_model::kernel_model()
    : last_activity_(std::chrono::system_clock::now()), started_at_(last_activity_) {}

nlohmann::json kernel_model::to_json(const std::string& id, const std::string& name,
                                     kernel_process_view view) const {
    std::lock_guard lock(mutex_);
    nlohmann::json m = {{"id", id},
                        {"name", name},
                        {"last_activity", kernelproto::format_iso_time(last_activity_)},
                        {"execution_state", execution_state_},
                        {"connections", connections_}};
    if (!reason_.empty()) m["reason"] = reason_;
    if (pid_ > 0 && view != kernel_process_view::hidden) {
        // smaps_rollup costs a walk of the process's mappings: not on every GET. A list reads
        // each kernel's at most once a minute, one kernel's at most every 5 s.
        const auto now = std::chrono::steady_clock::now();
        const auto max_age = view == kernel_process_view::shown_with_fresh_memory
                                 ? std::chrono::seconds(5)
                                 : std::chrono::seconds(60);
        if (!pss_ || now - pss_read_ > max_age) {
            pss_ = launcher::process_tree_pss(pid_);
            pss_read_ = now;
        }
        m["callisto"] = {{"launch", forked_ ? "zygote" : "exec"},
                         {"pid", pid_},
                         {"pss_bytes", pss_ ? nlohmann::json(*pss_) : nlohmann::json()},
                         {"owner", owner_},
                         {"started", kernelproto::format_iso_time(started_at_)},
                         {"executions", executions_},
                         {"held_by", to_string(holder_)}};
        if (!holder_context_.empty()) m["callisto"]["context_id"] = holder_context_;
    }
    return m;
}

pid_t kernel_model::pid() const {
    std::lock_guard lock(mutex_);
    return pid_;
}

bool kernel_model::forked() const {
    std::lock_guard lock(mutex_);
    return forked_;
}

void kernel_model::set_process(pid_t pid, bool forked) {
    std::lock_guard lock(mutex_);
    pid_ = pid;
    forked_ = forked;
    pss_.reset();
    pss_read_ = {};
}

kernel_activity kernel_model::activity() const {
    std::lock_guard lock(mutex_);
    return {execution_state_, last_activity_, busy_since_, started_at_, connections_};
}

std::string kernel_model::reason() const {
    std::lock_guard lock(mutex_);
    return reason_;
}

std::string kernel_model::owner() const {
    std::lock_guard lock(mutex_);
    return owner_;
}

void kernel_model::assign_owner(std::string name) {
    std::lock_guard lock(mutex_);
    owner_ = std::move(name);
}

void kernel_model::hold(kernel_holder holder, std::string context_id) {
    std::lock_guard lock(mutex_);
    holder_ = holder;
    holder_context_ = std::move(context_id);
}

void kernel_model::count_execution() {
    std::lock_guard lock(mutex_);
    ++executions_;
}

void kernel_model::touch() {
    std::lock_guard lock(mutex_);
    last_activity_ = std::chrono::system_clock::now();
}

void kernel_model::set(std::string execution_state, std::string reason) {
    std::lock_guard lock(mutex_);
    execution_state_ = std::move(execution_state);
    reason_ = std::move(reason);
}

void kernel_model::set_connections(std::size_t n) {
    std::lock_guard lock(mutex_);
    connections_ = n;
}

void kernel_model::on_kernel_message(std::string_view execution_state, bool running) {
    std::lock_guard lock(mutex_);
    last_activity_ = std::chrono::system_clock::now();
    if (execution_state.empty() || !running) return;
    if (execution_state == "busy" && execution_state_ != "busy") busy_since_ = last_activity_;
    execution_state_ = std::string(execution_state);
}

}  // namespace callisto::gateway::kernels
