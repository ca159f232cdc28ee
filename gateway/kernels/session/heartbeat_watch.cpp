#include "gateway/kernels/session/heartbeat_watch.hpp"

namespace callisto::gateway::kernels {

namespace {

std::chrono::seconds since(heartbeat_watch::clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::seconds>(heartbeat_watch::clock::now() - start);
}

}  // namespace

heartbeat_watch::heartbeat_watch(strand_type strand, std::chrono::seconds timeout,
                                 std::function<void(std::chrono::seconds)> on_frozen,
                                 host_load* host)
    : timer_(std::move(strand)), timeout_(timeout), on_frozen_(std::move(on_frozen)), host_(host) {}

void heartbeat_watch::missed(std::weak_ptr<const void> owner) {
    if (silent_since_) return;
    owner_ = std::move(owner);
    silent_since_ = clock::now();
    if (host_) host_->heartbeat_missing();
    arm();
}

void heartbeat_watch::excuse() {
    if (!silent_since_) return;
    silent_since_ = clock::now();
    arm();
}

void heartbeat_watch::arm() {
    const auto wait = ++armed_;
    if (timeout_.count() == 0) return;
    timer_.expires_after(timeout_);
    // Runs on the strand, as every member does: `armed_` needs no lock. The owner, locked, keeps
    // this watch (one of its members) alive through the call.
    timer_.async_wait([this, wait, owner = owner_](boost::system::error_code ec) {
        if (ec) return;
        const auto keep = owner.lock();
        if (!keep || wait != armed_ || !silent_since_) return;
        on_frozen_(since(*silent_since_));
    });
}

std::optional<std::chrono::seconds> heartbeat_watch::answered() {
    if (!silent_since_) return std::nullopt;
    const auto silence = since(*silent_since_);
    stop();
    return silence;
}

void heartbeat_watch::stop() {
    if (silent_since_ && host_) host_->heartbeat_back();
    silent_since_.reset();
    ++armed_;
    timer_.cancel();
}

}  // namespace callisto::gateway::kernels
