#include "launcher/sandbox_policy.hpp"

#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace callisto::launcher {

namespace {

constexpr std::uint64_t max_bytes = 1ull << 50;

std::uint64_t size_field(const nlohmann::json& value, const char* name) {
    std::uint64_t out = 0;
    if (value.is_number_integer() && value.get<std::int64_t>() > 0 &&
        value.get<std::uint64_t>() <= max_bytes)
        return value.get<std::uint64_t>();
    if (value.is_string() && parse_byte_size(value.get<std::string>(), out)) return out;
    throw std::invalid_argument(std::string("limits.") + name +
                                ": expected a size like \"2GiB\" or a positive number of bytes");
}

std::uint64_t count_field(const nlohmann::json& value, const char* name, std::uint64_t max) {
    if (value.is_number_integer() && value.get<std::int64_t>() > 0 &&
        value.get<std::uint64_t>() <= max)
        return value.get<std::uint64_t>();
    throw std::invalid_argument(std::string("limits.") + name + ": expected a number 1-" +
                                std::to_string(max));
}

}  // namespace

bool parse_byte_size(const std::string& text, std::uint64_t& out) {
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end == text.data() || value == 0) return false;
    const std::string unit(end, text.data() + text.size());
    const int shift = unit.empty() || unit == "B" ? 0
                      : unit == "KiB"             ? 10
                      : unit == "MiB"             ? 20
                      : unit == "GiB"             ? 30
                      : unit == "TiB"             ? 40
                                                  : -1;
    if (shift < 0 || value > (max_bytes >> shift)) return false;
    out = value << shift;
    return true;
}

std::string format_byte_size(std::uint64_t bytes) {
    static constexpr const char* units[] = {"TiB", "GiB", "MiB", "KiB"};
    static constexpr int shifts[] = {40, 30, 20, 10};
    for (int i = 0; i < 4; ++i) {
        const std::uint64_t unit = 1ull << shifts[i];
        if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + units[i];
    }
    return std::to_string(bytes) + "B";
}

sandbox_policy sandbox_policy::with_overrides(const nlohmann::json& limits) const {
    if (!limits.is_object()) throw std::invalid_argument("limits: expected an object");
    sandbox_policy out = *this;
    for (const auto& [key, value] : limits.items()) {
        if (key == "memory")
            out.memory_bytes = size_field(value, "memory");
        else if (key == "pids")
            out.pids = count_field(value, "pids", 1u << 22);
        else if (key == "cpu") {
            if (!value.is_number() || !(value.get<double>() >= 0.01) || value.get<double>() > 1024)
                throw std::invalid_argument("limits.cpu: expected cores 0.01-1024");
            out.cpu_cores = value.get<double>();
        } else if (key == "cpu_time")
            out.cpu_time_seconds = count_field(value, "cpu_time", 1u << 30);
        else if (key == "file_size")
            out.file_size_bytes = size_field(value, "file_size");
        else if (key == "open_files")
            out.open_files = count_field(value, "open_files", 1u << 20);
        else if (key == "disk")
            out.disk_bytes = size_field(value, "disk");
        else if (key == "tmp")
            out.tmp_bytes = size_field(value, "tmp");
        else
            throw std::invalid_argument("limits." + key +
                                        ": unknown (memory, pids, cpu, cpu_time, file_size, "
                                        "open_files, disk, tmp)");
    }
    return out;
}

std::string sandbox_policy::describe() const {
    std::ostringstream out;
    out << "memory " << format_byte_size(memory_bytes) << ", pids " << pids << ", cpu " << cpu_cores
        << " core(s), cpu time " << cpu_time_seconds << " s, file size "
        << format_byte_size(file_size_bytes) << ", open files " << open_files << ", disk "
        << format_byte_size(disk_bytes) << ", tmp " << format_byte_size(tmp_bytes);
    return out.str();
}

}  // namespace callisto::launcher
