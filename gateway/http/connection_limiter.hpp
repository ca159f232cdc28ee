#pragma once
// Caps the open client connections, in all and per client address, so that one client cannot
// hold every slot or file descriptor the gateway has. A connection keeps its slot for its whole
// life, across an upgrade to a WebSocket or a streamed answer.

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace callisto::gateway {

class connection_limiter {
    struct state;

public:
    // 0: no limit.
    connection_limiter(std::size_t max_total, std::size_t max_per_address);

    // Holds one connection's place until destroyed. Move-only; an empty slot holds nothing.
    class slot {
    public:
        slot() = default;
        slot(slot&& other) noexcept = default;
        slot& operator=(slot&& other) noexcept;
        ~slot();
        explicit operator bool() const { return state_ != nullptr; }

    private:
        friend class connection_limiter;
        slot(std::shared_ptr<state> s, std::string address)
            : state_(std::move(s)), address_(std::move(address)) {}
        void release();
        std::shared_ptr<state> state_;
        std::string address_;
    };

    enum class verdict { admitted, server_full, address_full };

    // `address` is the client's address as text. On admitted, `out` holds the place.
    verdict try_admit(const std::string& address, slot& out);

    std::size_t open_connections() const;
    std::size_t max_total() const { return max_total_; }
    std::size_t max_per_address() const { return max_per_address_; }

private:
    std::size_t max_total_;
    std::size_t max_per_address_;
    std::shared_ptr<state> state_;
};

}  // namespace callisto::gateway
