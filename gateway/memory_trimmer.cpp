#include "gateway/memory_trimmer.hpp"

#include <malloc.h>

namespace callisto::gateway {

memory_trimmer::memory_trimmer(boost::asio::io_context& ioc, std::chrono::seconds interval)
    : timer_(ioc), interval_(interval) {}

void memory_trimmer::start() { schedule(); }

void memory_trimmer::stop() { timer_.cancel(); }

void memory_trimmer::schedule() {
    timer_.expires_after(interval_);
    timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        ::malloc_trim(0);
        schedule();
    });
}

}  // namespace callisto::gateway
