#include "gateway/admin/activity_sampler.hpp"

namespace callisto::gateway::admin {

activity_sampler::activity_sampler(boost::asio::io_context& ioc, activity_history& history,
                                   std::function<activity_sample()> read)
    : timer_(ioc), history_(history), read_(std::move(read)) {}

void activity_sampler::start() {
    history_.add(read_());
    schedule();
}

void activity_sampler::stop() { timer_.cancel(); }

void activity_sampler::schedule() {
    timer_.expires_after(history_.interval());
    timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        history_.add(read_());
        schedule();
    });
}

}  // namespace callisto::gateway::admin
