#include "transport/detail/command_queue.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace callisto::transport::detail {

command_queue::command_queue() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (!wake_fd_) throw std::system_error(errno, std::generic_category(), "reactor: eventfd");
}

void command_queue::push(command c) {
    bool was_empty = false;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;  // open/send/close after stop are ignored
        was_empty = commands_.empty();
        commands_.push_back(std::move(c));
    }
    // A non-empty queue already has a wake-up on its way (the thread drains it whole).
    if (was_empty) wake();
}

std::deque<command> command_queue::take_all(bool& stopping) {
    std::deque<command> batch;
    std::lock_guard lock(mutex_);
    batch.swap(commands_);
    stopping = stopping_;
    return batch;
}

void command_queue::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake();
}

void command_queue::wake() {
    std::uint64_t one = 1;
    // EAGAIN means the counter is already non-zero: the thread will wake anyway.
    [[maybe_unused]] auto n = ::write(wake_fd_.get(), &one, sizeof one);
}

void command_queue::clear_wake() {
    std::uint64_t value = 0;
    [[maybe_unused]] auto n = ::read(wake_fd_.get(), &value, sizeof value);
}

}  // namespace callisto::transport::detail
