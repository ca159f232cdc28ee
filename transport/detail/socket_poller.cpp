#include "transport/detail/socket_poller.hpp"

#include <sys/epoll.h>

#include <array>
#include <cerrno>
#include <system_error>

namespace callisto::transport::detail {

socket_poller::socket_poller() : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (!epoll_fd_) throw std::system_error(errno, std::generic_category(), "reactor: epoll");
}

void socket_poller::watch(int fd, std::uint64_t token) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = token;
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
        throw std::system_error(errno, std::generic_category(), "reactor: epoll_ctl add");
}

void socket_poller::unwatch(int fd) {
    // ENOENT / EBADF: never watched, or already gone with its fd; either way not watched now.
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void socket_poller::wait(std::chrono::milliseconds timeout, std::vector<std::uint64_t>& tokens) {
    std::array<epoll_event, 256> events;
    const int ms = timeout.count() < 0 ? -1 : static_cast<int>(timeout.count());
    const int n = ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()), ms);
    if (n < 0) {
        if (errno == EINTR) return;
        throw std::system_error(errno, std::generic_category(), "reactor: epoll_wait");
    }
    for (int i = 0; i < n; ++i) tokens.push_back(events[static_cast<std::size_t>(i)].data.u64);
}

}  // namespace callisto::transport::detail
