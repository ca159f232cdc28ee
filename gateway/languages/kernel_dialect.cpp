#include "gateway/languages/kernel_dialect.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "gateway/languages/python_dialect.hpp"
#include "gateway/languages/python_snapshot.hpp"
#include "gateway/languages/r_dialect.hpp"
#include "gateway/languages/r_snapshot.hpp"

namespace callisto::gateway::languages {

kernel_dialect dialect_of(std::string_view kernelspec_language) {
    std::string lower(kernelspec_language);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "python") return kernel_dialect::python;
    if (lower == "r") return kernel_dialect::r;
    return kernel_dialect::other;
}

std::string_view to_string(kernel_dialect d) {
    switch (d) {
        case kernel_dialect::python: return "python";
        case kernel_dialect::r: return "r";
        case kernel_dialect::other: break;
    }
    return "other";
}

std::optional<std::string> state_save_code(kernel_dialect d, const std::string& workdir) {
    switch (d) {
        case kernel_dialect::python: return python_snapshot::save_code(workdir);
        case kernel_dialect::r: return r_snapshot::save_code(workdir);
        case kernel_dialect::other: break;
    }
    return std::nullopt;
}

std::optional<std::string> state_load_code(kernel_dialect d, const std::string& workdir) {
    switch (d) {
        case kernel_dialect::python: return python_snapshot::load_code(workdir);
        case kernel_dialect::r: return r_snapshot::load_code(workdir);
        case kernel_dialect::other: break;
    }
    return std::nullopt;
}

bool silent_requests_report_errors(kernel_dialect d) { return d != kernel_dialect::r; }

std::string string_literal(const std::string& s) {
    return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

std::optional<std::string> chdir_code(kernel_dialect d, const std::string& path) {
    switch (d) {
        case kernel_dialect::python: return python_dialect::chdir_code(path);
        case kernel_dialect::r: return r_dialect::chdir_code(path);
        case kernel_dialect::other: break;
    }
    return std::nullopt;
}

std::optional<std::string> home_code(kernel_dialect d, const std::string& path) {
    switch (d) {
        case kernel_dialect::python: return python_dialect::home_code(path);
        case kernel_dialect::r: return r_dialect::home_code(path);
        case kernel_dialect::other: break;
    }
    return std::nullopt;
}

std::optional<std::string> env_apply_code(kernel_dialect d, const env_vars& vars) {
    switch (d) {
        case kernel_dialect::python: return python_dialect::env_apply_code(vars);
        case kernel_dialect::r: return r_dialect::env_apply_code(vars);
        case kernel_dialect::other: break;
    }
    return std::nullopt;
}

std::optional<std::string> env_restore_code(kernel_dialect d) {
    switch (d) {
        case kernel_dialect::python: return python_dialect::env_restore_code();
        case kernel_dialect::r: return r_dialect::env_restore_code();
        case kernel_dialect::other: break;
    }
    return std::nullopt;
}

std::optional<std::string> reset_code(kernel_dialect d, const std::string& workdir, bool wipe) {
    switch (d) {
        case kernel_dialect::python: return python_dialect::reset_code(workdir, wipe);
        case kernel_dialect::r: return r_dialect::reset_code(workdir, wipe);
        case kernel_dialect::other: break;
    }
    return std::nullopt;
}

}  // namespace callisto::gateway::languages
