#include "gateway/kernels/heartbeat_watch.hpp"

namespace callisto::gateway::kernels {

namespace {

std::chrono::seconds since(heartbeat_watch::clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::seconds>(heartbeat_watch::clock::now() - start);
}

}  // namespace

heartbeat_watch::heartbeat_watch(strand_type strand, std::chrono::seconds timeout,
                                 std::function<void(std::chrono::seconds)> on_frozen)
    : timer_(std::move(strand)), timeout_(timeout), on_frozen_(std::move(on_frozen)) {}

void heartbeat_watch::missed() {
    if (silent_since_) return;
    silent_since_ = clock::now();
    arm();
}

void heartbeat_watch::excuse() {
    if (silent_since_) arm();
}

void heartbeat_watch::arm() {
    if (timeout_.count() == 0) return;
    timer_.expires_after(timeout_);
    // A wait that completed just before the watch went still finds it gone through `alive`.
    timer_.async_wait(
        [this, alive = std::weak_ptr<const int>(alive_)](boost::system::error_code ec) {
            if (ec || alive.expired() || !silent_since_) return;
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
    silent_since_.reset();
    timer_.cancel();
}

}  // namespace callisto::gateway::kernels
