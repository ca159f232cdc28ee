#include "common/byte_size.hpp"

#include <utility>

namespace callisto {

std::string format_size(std::uint64_t bytes) {
    if (bytes == 0) return "0";
    for (auto [scale, unit] :
         {std::pair{std::uint64_t{1} << 30, "GiB"}, std::pair{std::uint64_t{1} << 20, "MiB"},
          std::pair{std::uint64_t{1} << 10, "KiB"}})
        if (bytes % scale == 0) return std::to_string(bytes / scale) + unit;
    return std::to_string(bytes);
}

std::string describe_bytes(std::uint64_t bytes) {
    std::string out = std::to_string(bytes) + " bytes";
    if (const auto human = format_size(bytes); human != std::to_string(bytes))
        out += " (" + human + ")";
    return out;
}

}  // namespace callisto
