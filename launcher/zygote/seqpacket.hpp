#pragma once
// Whole messages over a SOCK_SEQPACKET socket (the gateway's link to a zygote): one send is one
// message, with up to max_seqpacket_fds descriptors passed beside it (SCM_RIGHTS).

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

// Larger messages are refused by the sender and reported as an error by the receiver.
inline constexpr std::size_t max_seqpacket_message = 1 << 20;
inline constexpr std::size_t max_seqpacket_fds = 4;

struct seqpacket_message {
    std::string bytes;
    std::vector<unique_fd> fds;  // the descriptors passed beside it, in order (CLOEXEC)
};

// False with errno set when it could not be sent (EMSGSIZE when too large or with too many
// descriptors).
bool send_seqpacket(int socket, std::string_view bytes, std::span<const int> fds = {});

// Blocks for the next message. nullopt at end of stream; throws std::system_error on an
// error or a truncated message (descriptors beyond max_seqpacket_fds among them).
std::optional<seqpacket_message> receive_seqpacket(int socket);

}  // namespace callisto::launcher
