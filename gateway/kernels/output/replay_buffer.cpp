#include "gateway/kernels/output/replay_buffer.hpp"

#include <algorithm>

namespace callisto::gateway::kernels {

void stamp_sequence(kernelproto::message& msg, std::uint64_t seq) {
    // metadata is a JSON object (checked when the message was decoded): insert the field
    // right after its opening brace.
    std::string& meta = msg.metadata;
    auto brace = meta.find('{');
    if (brace == std::string::npos) {
        meta = "{\"callisto_seq\":" + std::to_string(seq) + "}";
        return;
    }
    auto next = meta.find_first_not_of(" \t\r\n", brace + 1);
    const bool empty = next == std::string::npos || meta[next] == '}';
    meta.insert(brace + 1, "\"callisto_seq\":" + std::to_string(seq) + (empty ? "" : ","));
}

std::size_t replay_buffer::size_of(const kernelproto::message& msg) {
    std::size_t n = msg.header.size() + msg.parent_header.size() + msg.metadata.size() +
                    msg.content.size() + 64;
    for (const auto& b : msg.buffers) n += b.size();
    return n;
}

void replay_buffer::add(std::uint64_t seq, std::shared_ptr<const kernelproto::message> msg) {
    bytes_ += size_of(*msg);
    entries_.push_back({seq, std::move(msg)});
    while (bytes_ > max_bytes_ && !entries_.empty()) {
        bytes_ -= size_of(*entries_.front().msg);
        dropped_up_to_ = entries_.front().seq;
        entries_.pop_front();
    }
}

replay_buffer::replay replay_buffer::since(std::uint64_t seq, std::uint64_t last_seq) const {
    replay out;
    if (seq >= last_seq) return out;
    auto first = std::upper_bound(entries_.begin(), entries_.end(), seq,
                                  [](std::uint64_t s, const entry& e) { return s < e.seq; });
    for (auto it = first; it != entries_.end(); ++it) out.messages.push_back(*it);
    if (dropped_up_to_ > seq) {
        out.gap_from = seq + 1;
        out.gap_to = dropped_up_to_;
    }
    return out;
}

void replay_buffer::clear() {
    if (!entries_.empty()) dropped_up_to_ = entries_.back().seq;
    entries_.clear();
    bytes_ = 0;
}

}  // namespace callisto::gateway::kernels
