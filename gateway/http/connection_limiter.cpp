#include "gateway/http/connection_limiter.hpp"

namespace callisto::gateway {

struct connection_limiter::state {
    std::mutex mutex;
    std::size_t total = 0;
    std::unordered_map<std::string, std::size_t> per_address;
};

connection_limiter::connection_limiter(std::size_t max_total, std::size_t max_per_address)
    : max_total_(max_total), max_per_address_(max_per_address), state_(std::make_shared<state>()) {}

connection_limiter::verdict connection_limiter::try_admit(const std::string& address, slot& out) {
    {
        std::lock_guard lock(state_->mutex);
        if (max_total_ && state_->total >= max_total_) return verdict::server_full;
        auto& mine = state_->per_address[address];
        if (max_per_address_ && mine >= max_per_address_) return verdict::address_full;
        ++mine;
        ++state_->total;
    }
    out = slot(state_, address);
    return verdict::admitted;
}

std::size_t connection_limiter::open_connections() const {
    std::lock_guard lock(state_->mutex);
    return state_->total;
}

connection_limiter::slot& connection_limiter::slot::operator=(slot&& other) noexcept {
    if (this != &other) {
        release();
        state_ = std::move(other.state_);
        address_ = std::move(other.address_);
    }
    return *this;
}

connection_limiter::slot::~slot() { release(); }

void connection_limiter::slot::release() {
    if (!state_) return;
    {
        std::lock_guard lock(state_->mutex);
        --state_->total;
        auto it = state_->per_address.find(address_);
        if (it != state_->per_address.end() && --it->second == 0) state_->per_address.erase(it);
    }
    state_.reset();
}

}  // namespace callisto::gateway
