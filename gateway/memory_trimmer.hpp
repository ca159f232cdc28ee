#pragma once
// Gives freed heap memory back to the system at an interval. glibc raises its mmap threshold
// each time a large buffer is freed, so after a few big kernel messages later ones come from
// the heap, and a burst leaves the RSS at its peak (1-1.35 GB measured after a flood) although
// nothing holds that memory any more. malloc_trim returns the free pages of every arena.

#include <chrono>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace callisto::gateway {

class memory_trimmer {
public:
    memory_trimmer(boost::asio::io_context& ioc, std::chrono::seconds interval);

    void start();
    void stop();  // on the io_context's threads, or before they run

private:
    void schedule();

    boost::asio::steady_timer timer_;
    std::chrono::seconds interval_;
};

}  // namespace callisto::gateway
