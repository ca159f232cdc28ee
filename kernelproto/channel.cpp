#include "kernelproto/channel.hpp"

namespace callisto::kernelproto {

std::string_view to_string(channel ch) {
    switch (ch) {
        case channel::shell: return "shell";
        case channel::control: return "control";
        case channel::stdin_: return "stdin";
        case channel::iopub: return "iopub";
    }
    return "shell";  // unreachable for valid enum values; keeps -Wreturn-type quiet
}

std::optional<channel> channel_from_string(std::string_view name) {
    for (channel ch : all_channels) {
        if (to_string(ch) == name) return ch;
    }
    return std::nullopt;
}

}  // namespace callisto::kernelproto
