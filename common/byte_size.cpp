#include "common/byte_size.hpp"

#include <charconv>
#include <utility>

namespace callisto {
namespace {

constexpr std::pair<int, const char*> units[] = {
    {40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}};

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end == text.data()) return std::nullopt;
    const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
    int shift = unit.empty() || unit == "B" ? 0 : -1;
    for (const auto& [bits, name] : units)
        if (unit == name) shift = bits;
    if (shift < 0 || value > (max_size_bytes >> shift)) return std::nullopt;
    return value << shift;
}

std::string format_size(std::uint64_t bytes) {
    if (bytes == 0) return "0";
    for (const auto& [bits, name] : units)
        if (bytes % (std::uint64_t{1} << bits) == 0) return std::to_string(bytes >> bits) + name;
    return std::to_string(bytes);
}

std::string describe_bytes(std::uint64_t bytes) {
    std::string out = std::to_string(bytes) + " bytes";
    if (const auto human = format_size(bytes); human != std::to_string(bytes))
        out += " (" + human + ")";
    return out;
}

}  // namespace callisto
