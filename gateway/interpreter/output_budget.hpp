#pragma once
// A bounded text accumulator for one output stream of one execution: keeps the first and the
// last half of the budget and counts what fell between, so a runaway print stays readable
// (the start says what began, the end says how it finished) and the loss is explicit.

#include <cstddef>
#include <string>
#include <string_view>

namespace callisto::gateway::interpreter {

class output_budget {
public:
    explicit output_budget(std::size_t max_bytes);

    // Adds text; returns the part of it that went into the head, i.e. what a live stream may
    // still show (empty once the head is full).
    std::string_view append(std::string_view text);

    // head + "\n[... N bytes truncated ...]\n" + tail, or everything when nothing was cut.
    std::string str() const;
    std::size_t total_bytes() const { return total_; }
    std::size_t truncated_bytes() const;
    bool head_full() const { return head_.size() >= head_max_; }
    std::size_t max_bytes() const { return head_max_ + tail_max_; }

    static std::string marker(std::size_t bytes);

private:
    std::size_t head_max_;
    std::size_t tail_max_;
    std::size_t total_ = 0;
    std::string head_;
    std::string tail_;  // holds up to 2 * tail_max_ before trimming, so trimming is amortised
};

}  // namespace callisto::gateway::interpreter
