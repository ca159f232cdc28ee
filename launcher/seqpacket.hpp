#pragma once
// Whole messages over a SOCK_SEQPACKET socket (the gateway's link to a zygote): one send is one
// message, with at most one descriptor passed beside it (SCM_RIGHTS).

#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

// Larger messages are refused by the sender and reported as an error by the receiver.
inline constexpr std::size_t max_seqpacket_message = 1 << 20;

struct seqpacket_message {
    std::string bytes;
    unique_fd fd;  // the descriptor passed beside it, if any (CLOEXEC)
};

// False with errno set when it could not be sent (EMSGSIZE when too large).
bool send_seqpacket(int socket, std::string_view bytes, int fd = -1);

// Blocks for the next message. nullopt at end of stream; throws std::system_error on an
// error, a truncated message or more than one descriptor.
std::optional<seqpacket_message> receive_seqpacket(int socket);

}  // namespace callisto::launcher
