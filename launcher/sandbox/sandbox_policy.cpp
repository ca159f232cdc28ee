#include "launcher/sandbox/sandbox_policy.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "common/byte_size.hpp"

namespace callisto::launcher {

namespace {

std::uint64_t size_field(const nlohmann::json& value, const char* name) {
    if (value.is_number_integer() && value.get<std::int64_t>() > 0 &&
        value.get<std::uint64_t>() <= max_size_bytes)
        return value.get<std::uint64_t>();
    if (value.is_string())
        if (const auto bytes = parse_size(value.get<std::string>()); bytes && *bytes > 0)
            return *bytes;
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
    out << "memory " << format_size(memory_bytes) << ", pids " << pids << ", cpu " << cpu_cores
        << " core(s), cpu time " << cpu_time_seconds << " s, file size "
        << format_size(file_size_bytes) << ", open files " << open_files << ", disk "
        << format_size(disk_bytes) << ", tmp " << format_size(tmp_bytes);
    return out.str();
}

}  // namespace callisto::launcher
