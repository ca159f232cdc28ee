#pragma once
// The four message channels of a Jupyter kernel that carry signed messages.
// (The heartbeat channel carries raw bytes and lives only in the transport.)

#include <cstdint>
#include <optional>
#include <string_view>

namespace callisto::kernelproto {

enum class channel : std::uint8_t { shell, control, stdin_, iopub };

inline constexpr channel all_channels[] = {channel::shell, channel::control, channel::stdin_,
                                           channel::iopub};

// "shell", "control", "stdin", "iopub"
std::string_view to_string(channel ch);
std::optional<channel> channel_from_string(std::string_view name);

}  // namespace callisto::kernelproto
