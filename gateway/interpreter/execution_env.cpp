#include "gateway/interpreter/execution_env.hpp"

#include <algorithm>
#include <array>

namespace callisto::gateway::interpreter {

namespace {

bool is_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

}  // namespace

std::optional<std::string> check_env_name(std::string_view name, const env_limits& limits) {
    if (name.empty()) return std::string("an environment variable name is empty");
    if (name.size() > limits.max_name_bytes)
        return "environment variable names are at most " + std::to_string(limits.max_name_bytes) +
               " bytes";
    const std::string shown =
        name.size() <= 64 ? std::string(name) : std::string(name.substr(0, 64)) + "...";
    if (!is_name_start(name.front()) || !std::all_of(name.begin(), name.end(), is_name_char))
        return nlohmann::json(shown).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
               " is not a valid environment variable name: letters, digits and '_', not "
               "starting with a digit";
    static constexpr std::array<std::string_view, 5> refused_prefixes = {"LD_", "PYTHON", "JPY_",
                                                                         "JUPYTER_", "CALLISTO_"};
    for (auto prefix : refused_prefixes)
        if (name.starts_with(prefix))
            return "'" + shown + "' may not be set per execution: " + std::string(prefix) +
                   "* variables are read by the kernel process itself (the loader, Python, "
                   "Jupyter) or belong to Callisto";
    static constexpr std::array<std::string_view, 4> refused_names = {"PATH", "HOME", "TMPDIR",
                                                                      "IPYTHONDIR"};
    for (auto refused : refused_names)
        if (name == refused)
            return "'" + shown + "' may not be set per execution: the kernel's sandbox decides it";
    return std::nullopt;
}

std::optional<env_vars> parse_env(const nlohmann::json& value, const env_limits& limits,
                                  std::string& error) {
    if (!value.is_object()) {
        error = "'env' must be an object of names to string values";
        return std::nullopt;
    }
    if (value.size() > limits.max_vars) {
        error = "'env' has more than " + std::to_string(limits.max_vars) + " variables";
        return std::nullopt;
    }
    env_vars vars;
    std::size_t total = 0;
    for (const auto& [name, v] : value.items()) {
        if (auto why = check_env_name(name, limits)) {
            error = *why;
            return std::nullopt;
        }
        if (!v.is_string()) {
            error = "the value of '" + name + "' in 'env' must be a string";
            return std::nullopt;
        }
        const auto& text = v.get_ref<const std::string&>();
        if (text.find('\0') != std::string::npos) {
            error = "the value of '" + name + "' in 'env' contains a NUL character";
            return std::nullopt;
        }
        if (text.size() > limits.max_value_bytes) {
            error = "the value of '" + name + "' in 'env' is longer than " +
                    std::to_string(limits.max_value_bytes) + " bytes";
            return std::nullopt;
        }
        total += name.size() + text.size();
        if (total > limits.max_total_bytes) {
            error = "'env' is larger than " + std::to_string(limits.max_total_bytes) + " bytes";
            return std::nullopt;
        }
        vars.emplace_back(name, text);
    }
    std::sort(vars.begin(), vars.end());
    return vars;
}

}  // namespace callisto::gateway::interpreter
