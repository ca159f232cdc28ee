#include "gateway/kernels/session/drop_recovery.hpp"

namespace callisto::gateway::kernels {

using kernelproto::channel;

namespace {

// Barrier ids kept to recognise late answers; a kernel that keeps dropping messages cannot
// grow them without bound.
constexpr std::size_t max_barriers_kept = 256;

}  // namespace

std::vector<channel> drop_recovery::dropped(channel ch, const std::vector<request>& in_flight,
                                            std::vector<std::string> awaiting_idle) {
    active_ = true;
    channels_.insert(ch);
    replies_.clear();
    for (const auto& r : in_flight)
        if (channels_.contains(r.channel)) replies_.push_back(r.msg_id);
    const bool iopub = channels_.contains(channel::iopub);
    idles_ = iopub ? std::move(awaiting_idle) : std::vector<std::string>{};
    const bool shell = iopub || channels_.contains(channel::shell);
    const bool control = channels_.contains(channel::control);
    shell_in_ = !shell;
    control_in_ = !control;
    status_in_ = !iopub;
    shell_barriers_.clear();
    control_barrier_.clear();
    if (every_barrier_.size() > max_barriers_kept) every_barrier_.clear();
    std::vector<channel> barriers;
    if (shell) barriers.push_back(channel::shell);
    if (control) barriers.push_back(channel::control);
    return barriers;
}

void drop_recovery::barrier_sent(channel ch, std::string msg_id) {
    every_barrier_.insert(msg_id);
    if (ch == channel::control) {
        control_barrier_ = std::move(msg_id);
        return;
    }
    shell_barriers_.insert(std::move(msg_id));
}

bool drop_recovery::is_barrier(const std::string& parent_msg_id) const {
    return !parent_msg_id.empty() && every_barrier_.contains(parent_msg_id);
}

void drop_recovery::barrier_replied(const std::string& parent_msg_id) {
    if (!active_ || parent_msg_id.empty()) return;
    // Any shell barrier of this drop: each went after everything the verdict looks at.
    if (shell_barriers_.contains(parent_msg_id)) shell_in_ = true;
    if (parent_msg_id == control_barrier_) control_in_ = true;
}

void drop_recovery::barrier_status(const std::string& parent_msg_id) {
    if (active_ && shell_barriers_.contains(parent_msg_id)) status_in_ = true;
}

bool drop_recovery::needs_another_status_barrier() const {
    return active_ && shell_in_ && !status_in_;
}

std::optional<drop_recovery::verdict> drop_recovery::take_verdict() {
    if (!active_ || !shell_in_ || !control_in_ || !status_in_) return std::nullopt;
    verdict v{std::move(replies_), std::move(idles_)};
    auto kept = std::move(every_barrier_);
    reset();
    every_barrier_ = std::move(kept);
    return v;
}

}  // namespace callisto::gateway::kernels
