#pragma once
// Cutting the text of a stream message's content ({"name": "stdout", "text": "..."}) down to a
// size, on its serialized bytes, without building a DOM: the output caps keep the first part of
// the message that crosses a limit, and that message can be tens of MB.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace callisto::kernelproto {

// The content with its top-level "text" string shortened so the whole content is at most
// max_bytes long. The cut falls between characters: never inside an escape sequence, a UTF-8
// sequence or a \uD8xx\uDCxx surrogate pair. nullopt when the content is not an object with a
// string "text", or when not even one character of the text fits. Never throws on any input.
std::optional<std::string> truncate_stream_text(std::string_view content, std::size_t max_bytes);

}  // namespace callisto::kernelproto
