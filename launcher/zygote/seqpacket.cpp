#include "launcher/zygote/seqpacket.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

namespace callisto::launcher {

bool send_seqpacket(int socket, std::string_view bytes, std::span<const int> fds) {
    if (bytes.size() > max_seqpacket_message || fds.size() > max_seqpacket_fds) {
        errno = EMSGSIZE;
        return false;
    }
    iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(max_seqpacket_fds * sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
        std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
    }
    ssize_t n;
    do {
        n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(bytes.size());
}

std::optional<seqpacket_message> receive_seqpacket(int socket) {
    thread_local std::vector<char> buffer(max_seqpacket_message);
    iovec iov{buffer.data(), buffer.size()};
    // Descriptors past the room here are closed by the kernel and flagged MSG_CTRUNC.
    alignas(cmsghdr) char control[CMSG_SPACE(max_seqpacket_fds * sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do {
        n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) throw std::system_error(errno, std::generic_category(), "recvmsg");

    seqpacket_message out;
    auto& received = out.fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            received.emplace_back(fd);
        }
    }
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
        throw std::system_error(EMSGSIZE, std::generic_category(), "recvmsg: message truncated");
    if (n == 0 && received.empty()) return std::nullopt;  // the peer closed
    out.bytes.assign(buffer.data(), static_cast<std::size_t>(n));
    return out;
}

}  // namespace callisto::launcher
