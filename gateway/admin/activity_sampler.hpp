#pragma once
// Takes an activity sample at start and then every interval, on the io_context, into an
// activity_history. What a sample holds is read by the function it is given (the composition
// root knows where the kernels and the counters are).

#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/admin/activity_history.hpp"

namespace callisto::gateway::admin {

class activity_sampler {
public:
    activity_sampler(boost::asio::io_context& ioc, activity_history& history,
                     std::function<activity_sample()> read);

    void start();
    void stop();  // on the io_context's threads, or before they run

private:
    void schedule();

    boost::asio::steady_timer timer_;
    activity_history& history_;
    std::function<activity_sample()> read_;
};

}  // namespace callisto::gateway::admin
