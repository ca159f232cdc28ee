#pragma once
// The bytes of messages one party has in the gateway, wherever they are, and the rule that keeps
// them bounded. Each message admitted carries a lease (kernelproto::message::lease) that counts
// its bytes until the last copy of it is gone.
//
// From a kernel (kernel_session): held while waiting for the kernel's strand, in an interpreter
// context's queue, in a WebSocket's send queue as a v1 frame, in the replay buffer. The reactor
// asks admit() before it verifies a message, and one that would pass the budget is dropped
// unread, at the cost of moving a pointer: a kernel that sends output faster than the gateway
// can pass it on loses that output (and is told so) instead of growing the gateway's memory,
// which would be a way around the kernel's own memory limit.
// Towards a kernel (websocket_session): held until the reactor hands the frames to ZeroMQ; a
// client sending faster than its kernel takes input is refused with a clear error.
//
// Thread-safe: admit() and lease() run on the receiving thread, leases end on any thread.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace callisto::gateway::kernels {

class message_budget {
public:
    // Small messages (statuses, replies) still pass over the budget, within an allowance of
    // their own: a client waiting for "idle" must get it even while output is being dropped.
    static constexpr std::size_t small_message_bytes = 64 * 1024;
    static constexpr std::size_t small_allowance_bytes = 16u << 20;

    explicit message_budget(std::size_t budget_bytes);  // 0: no budget

    // Whether a message of `bytes` may come in; a refusal is counted.
    bool admit(std::size_t bytes);

    // Counts `bytes` as held until the returned lease (and every copy of it) is gone.
    std::shared_ptr<const void> lease(std::size_t bytes);

    std::size_t held_bytes() const { return counters_->held.load(); }
    std::size_t budget_bytes() const { return budget_; }

    struct dropped {
        std::uint64_t messages = 0;
        std::uint64_t bytes = 0;
    };
    // What was refused since the last call.
    dropped take_dropped();

private:
    struct counters {
        std::atomic<std::size_t> held{0};
        std::atomic<std::uint64_t> dropped_messages{0};
        std::atomic<std::uint64_t> dropped_bytes{0};
    };
    std::size_t budget_;
    std::shared_ptr<counters> counters_;  // shared with the leases, which may outlive us
};

}  // namespace callisto::gateway::kernels
