#pragma once
// epoll over the notification fds of ZeroMQ sockets (ZMQ_FD) and the reactor's wake-up fd, so a
// wake-up costs what is ready, not what is open: zmq_poll rebuilds and scans every socket of
// every kernel on each call, which at 500 kernels (2,500 sockets) took the reactor thread's
// whole core.
//
// A ZMQ_FD says only that the socket's state may have changed; it is not level-triggered on
// messages. Once ZMQ_EVENTS was read (or a send or receive happened), the fd stays quiet even
// with messages still waiting. The reactor therefore asks ZMQ_EVENTS after every operation on a
// socket and keeps serving it while it is ready; this class only reports which fds fired.

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/unique_fd.hpp"

namespace callisto::transport::detail {

class socket_poller {
public:
    socket_poller();  // throws std::system_error when no epoll fd can be had

    // Reports `fd` with `token` when it becomes readable. Throws std::system_error.
    void watch(int fd, std::uint64_t token);
    // Forgets `fd`; call before the socket closes, as ZeroMQ may close its fd later and a new
    // socket may get the same number. Unknown fds are ignored.
    void unwatch(int fd);

    // Waits up to `timeout` (negative: without limit) and appends the tokens of the fds that
    // fired. An interrupted wait returns none.
    void wait(std::chrono::milliseconds timeout, std::vector<std::uint64_t>& tokens);

private:
    unique_fd epoll_fd_;
};

}  // namespace callisto::transport::detail
