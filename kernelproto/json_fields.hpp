#pragma once
// The fields of a JSON object Callisto reads back (the records of --state-dir), each with a
// readable std::invalid_argument when it is missing or of another type: "no 'pid'",
// "'pid' is not a whole number".

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace callisto::kernelproto {

const nlohmann::json& required_field(const nlohmann::json& j, const char* name);
std::string string_field(const nlohmann::json& j, const char* name);
bool bool_field(const nlohmann::json& j, const char* name);

// A whole number from 0 to T's maximum.
template <class T>
T whole_field(const nlohmann::json& j, const char* name) {
    const auto& v = required_field(j, name);
    const bool whole =
        v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
    if (!whole ||
        v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
        throw std::invalid_argument(std::string("'") + name + "' is not a whole number");
    return static_cast<T>(v.get<std::uint64_t>());
}

}  // namespace callisto::kernelproto
