#include "launcher/sandbox/netns_listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "launcher/process/process_tree.hpp"

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
        // The port again after a gateway restart: the connections the earlier gateway's
        // listener accepted linger (TIME_WAIT) in the kernel's namespace, and hold it without
        // this. A listener there still cannot be doubled: Linux refuses the bind while any
        // socket listens on the port, and nothing unprivileged binds below 1024.
        const int on = 1;
        if (::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) {
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

std::variant<unique_fd, std::error_code> open_jail_network(pid_t pid) {
    struct stat own {};
    if (::stat("/proc/self/ns/net", &own) != 0)
        return std::error_code(errno, std::system_category());
    // Breadth first: the jail's outermost process. A jail is a few processes deep at most;
    // the bound keeps a surprise cheap.
    std::deque<pid_t> pending{pid};
    for (std::size_t seen = 0; !pending.empty() && seen < 64; ++seen) {
        const pid_t p = pending.front();
        pending.pop_front();
        unique_fd ns(
            ::open(("/proc/" + std::to_string(p) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
        struct stat st {};
        if (ns && ::fstat(ns.get(), &st) == 0 &&
            (st.st_ino != own.st_ino || st.st_dev != own.st_dev))
            return ns;
        for (pid_t c : children_of(p)) pending.push_back(c);
    }
    return std::make_error_code(std::errc::no_such_file_or_directory);
}

}  // namespace callisto::launcher
