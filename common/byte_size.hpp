#pragma once
// Sizes as people write them, for messages that name a limit: "1MiB", and "1048576 bytes
// (1MiB)" where the exact figure matters too.

#include <cstdint>
#include <string>

namespace callisto {

// 268435456 -> "256MiB", 1536 -> "1536" (a size that is no whole unit stays in bytes); the
// form the size options (--upload-limit=256MiB) take back.
std::string format_size(std::uint64_t bytes);

// 1048576 -> "1048576 bytes (1MiB)"; 1000 -> "1000 bytes".
std::string describe_bytes(std::uint64_t bytes);

}  // namespace callisto
