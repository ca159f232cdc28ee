#include "gateway/kernels/output/message_budget.hpp"

namespace callisto::gateway::kernels {

message_budget::message_budget(std::size_t budget_bytes)
    : budget_(budget_bytes), counters_(std::make_shared<counters>()) {}

bool message_budget::admit(std::size_t bytes) {
    if (budget_ == 0) return true;
    const std::size_t held = counters_->held.load();
    if (held <= budget_ && bytes <= budget_ - held) return true;
    if (bytes <= small_message_bytes && held <= budget_ + small_allowance_bytes) return true;
    counters_->dropped_messages.fetch_add(1);
    counters_->dropped_bytes.fetch_add(bytes);
    return false;
}

std::shared_ptr<const void> message_budget::lease(std::size_t bytes) {
    counters_->held.fetch_add(bytes);
    return std::shared_ptr<const void>(
        nullptr, [c = counters_, bytes](const void*) { c->held.fetch_sub(bytes); });
}

message_budget::dropped message_budget::take_dropped() {
    dropped d;
    d.messages = counters_->dropped_messages.exchange(0);
    d.bytes = counters_->dropped_bytes.exchange(0);
    return d;
}

}  // namespace callisto::gateway::kernels
