#pragma once
// Sizes as people write them: the one parser and printer of sizes for flags, config files,
// kernelspec limits and messages that name a limit. Binary units only ("2GiB"), so nobody has
// to guess whether a "GB" is 10^9.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace callisto {

// The largest size anything takes: 1PiB.
inline constexpr std::uint64_t max_size_bytes = std::uint64_t{1} << 50;

// "1000" or "1000B" (bytes), "512KiB", "32MiB", "2GiB", "1TiB" -> bytes; "0" -> 0 (callers
// say whether 0 means "none" or is refused). nullopt for anything else, and past 1PiB.
std::optional<std::uint64_t> parse_size(std::string_view text);

// 268435456 -> "256MiB", 1536 -> "1536" (a size that is no whole unit stays in bytes); the
// form parse_size takes back.
std::string format_size(std::uint64_t bytes);

// 1048576 -> "1048576 bytes (1MiB)"; 1000 -> "1000 bytes".
std::string describe_bytes(std::uint64_t bytes);

}  // namespace callisto
