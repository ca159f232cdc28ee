#include "kernelproto/json_fields.hpp"

namespace callisto::kernelproto {

const nlohmann::json& required_field(const nlohmann::json& j, const char* name) {
    const auto it = j.find(name);
    if (it == j.end()) throw std::invalid_argument(std::string("no '") + name + "'");
    return *it;
}

std::string string_field(const nlohmann::json& j, const char* name) {
    const auto& v = required_field(j, name);
    if (!v.is_string()) throw std::invalid_argument(std::string("'") + name + "' is not a string");
    return v.get<std::string>();
}

bool bool_field(const nlohmann::json& j, const char* name) {
    const auto& v = required_field(j, name);
    if (!v.is_boolean())
        throw std::invalid_argument(std::string("'") + name + "' is not a boolean");
    return v.get<bool>();
}

}  // namespace callisto::kernelproto
