#pragma once
// The recent iopub output of one kernel, bounded in bytes, so a client that reconnects with
// ?since=SEQ gets what it missed, in order, or is told plainly that part of it was dropped.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "kernelproto/message.hpp"

namespace callisto::gateway::kernels {

// Every message relayed to a client carries its kernel's sequence number in its metadata
// ("callisto_seq"), spliced in without re-serialising the rest of the message.
void stamp_sequence(kernelproto::message& msg, std::uint64_t seq);

class replay_buffer {
public:
    struct entry {
        std::uint64_t seq;
        std::shared_ptr<const kernelproto::message> msg;
    };
    struct replay {
        std::vector<entry> messages;  // seq > since, oldest first
        // Messages after `since` that no longer are in the buffer: seq in [gap_from, gap_to].
        std::uint64_t gap_from = 0;
        std::uint64_t gap_to = 0;
        bool has_gap() const { return gap_to != 0; }
    };

    explicit replay_buffer(std::size_t max_bytes) : max_bytes_(max_bytes) {}

    // Keeps msg (already stamped with seq); seq must grow. Drops the oldest to stay in bounds.
    void add(std::uint64_t seq, std::shared_ptr<const kernelproto::message> msg);
    replay since(std::uint64_t seq, std::uint64_t last_seq) const;

    std::size_t bytes() const { return bytes_; }
    std::size_t size() const { return entries_.size(); }
    void clear();

private:
    static std::size_t size_of(const kernelproto::message& msg);

    std::size_t max_bytes_;
    std::size_t bytes_ = 0;
    std::uint64_t dropped_up_to_ = 0;  // highest seq evicted
    std::deque<entry> entries_;
};

}  // namespace callisto::gateway::kernels
