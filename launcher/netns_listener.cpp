#include "launcher/netns_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <thread>

namespace callisto::launcher {

std::variant<unique_fd, std::error_code> listen_in_namespace(int namespace_fd, std::uint16_t port,
                                                             int backlog) {
    if (namespace_fd < 0) return std::make_error_code(std::errc::bad_file_descriptor);
    int error = 0;
    unique_fd listener;
    // Not this thread: it would stay in the kernel's namespace. std::thread, not a fork: the
    // namespace is the thread's, the descriptor the process's.
    std::thread([&] {
        if (::setns(namespace_fd, CLONE_NEWNET) != 0) {
            error = errno;
            return;
        }
        unique_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!s) {
            error = errno;
            return;
        }
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(s.get(), backlog) != 0) {
            error = errno;
            return;
        }
        listener = std::move(s);
    }).join();
    if (error != 0) return std::error_code(error, std::system_category());
    return listener;
}

}  // namespace callisto::launcher
