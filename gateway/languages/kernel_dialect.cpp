#include "gateway/languages/kernel_dialect.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "gateway/languages/python_dialect.hpp"
#include "gateway/languages/python_snapshot.hpp"
#include "gateway/languages/r_dialect.hpp"
#include "gateway/languages/r_snapshot.hpp"

namespace callisto::gateway::languages {

namespace {

// The code d's dialect writes with `python` or `r` (the same function of each dialect's
// namespace); nullopt for `other`, which is sent none of the gateway's code.
template <class... Params, class... Args>
std::optional<std::string> in_dialect(kernel_dialect d, std::string (*python)(Params...),
                                      std::string (*r)(Params...), const Args&... args) {
    switch (d) {
        case kernel_dialect::python: return python(args...);
        case kernel_dialect::r: return r(args...);
        case kernel_dialect::other: break;
    }
    return std::nullopt;
}

}  // namespace

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
    return in_dialect(d, python_snapshot::save_code, r_snapshot::save_code, workdir);
}

std::optional<std::string> state_load_code(kernel_dialect d, const std::string& workdir) {
    return in_dialect(d, python_snapshot::load_code, r_snapshot::load_code, workdir);
}

bool silent_requests_report_errors(kernel_dialect d) { return d != kernel_dialect::r; }

std::string string_literal(const std::string& s) {
    return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

std::optional<std::string> chdir_code(kernel_dialect d, const std::string& path) {
    return in_dialect(d, python_dialect::chdir_code, r_dialect::chdir_code, path);
}

std::optional<std::string> home_code(kernel_dialect d, const std::string& path) {
    return in_dialect(d, python_dialect::home_code, r_dialect::home_code, path);
}

std::optional<std::string> env_apply_code(kernel_dialect d, const env_vars& vars) {
    return in_dialect(d, python_dialect::env_apply_code, r_dialect::env_apply_code, vars);
}

std::optional<std::string> env_restore_code(kernel_dialect d) {
    return in_dialect(d, python_dialect::env_restore_code, r_dialect::env_restore_code);
}

std::optional<std::string> reset_code(kernel_dialect d, const std::string& workdir, bool wipe) {
    return in_dialect(d, python_dialect::reset_code, r_dialect::reset_code, workdir, wipe);
}

}  // namespace callisto::gateway::languages
