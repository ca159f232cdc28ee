#include "gateway/interpreter/output_budget.hpp"

#include "gateway/kernels/output/output_fields.hpp"

namespace callisto::gateway::interpreter {

output_budget::output_budget(std::size_t max_bytes)
    : head_max_(max_bytes / 2), tail_max_(max_bytes - max_bytes / 2) {}

std::string_view output_budget::append(std::string_view text) {
    total_ += text.size();
    std::string_view to_head;
    if (head_.size() < head_max_) {
        to_head = text.substr(0, head_max_ - head_.size());
        head_.append(to_head);
        text.remove_prefix(to_head.size());
    }
    if (!text.empty() && tail_max_ > 0) {
        if (text.size() >= tail_max_) {
            tail_.assign(text.substr(text.size() - tail_max_));
        } else {
            tail_.append(text);
            if (tail_.size() > 2 * tail_max_) tail_.erase(0, tail_.size() - tail_max_);
        }
    }
    return to_head;
}

std::size_t output_budget::truncated_bytes() const {
    const std::size_t kept = head_.size() + std::min(tail_.size(), tail_max_);
    return total_ > kept ? total_ - kept : 0;
}

std::string output_budget::marker(std::size_t bytes) { return kernels::truncation_marker(bytes); }

std::string output_budget::str() const {
    std::string_view tail = tail_;
    if (tail.size() > tail_max_) tail.remove_prefix(tail.size() - tail_max_);
    std::string out = head_;
    if (const std::size_t cut = truncated_bytes(); cut > 0) out += marker(cut);
    out.append(tail);
    return out;
}

}  // namespace callisto::gateway::interpreter
