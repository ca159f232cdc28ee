#pragma once
// Per-execution environment variables ("env" in an execution request): which names and values
// are accepted. The kernel's dialect writes the two silent requests that set them before the
// user's code and put the previous values back after it (languages/kernel_dialect.hpp):
// separate requests, not a wrapper around the user's code, keep its tracebacks and line
// numbers its own. Pure, so every bad form is unit-tested.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/languages/kernel_dialect.hpp"

namespace callisto::gateway::interpreter {

using env_vars = languages::env_vars;  // sorted by name

struct env_limits {
    std::size_t max_vars = 64;
    std::size_t max_name_bytes = 128;
    std::size_t max_value_bytes = 32 * 1024;
    std::size_t max_total_bytes = 256 * 1024;  // names and values together
};

// Why `name` may not be set per execution, or nullopt when it may. Names are POSIX portable
// ([A-Za-z_][A-Za-z0-9_]*). Refused: what the kernel process reads at its start or the sandbox
// decides (LD_* for the dynamic loader, PYTHON* for the interpreter, JPY_*/JUPYTER_*/
// IPYTHONDIR for Jupyter, CALLISTO_*, and PATH, HOME, TMPDIR, which the sandbox sets).
[[nodiscard]] std::optional<std::string> check_env_name(std::string_view name,
                                                        const env_limits& limits);

// `value` is the "env" member of the request: an object of strings. On error returns nullopt
// and a sentence for the client in `error`.
std::optional<env_vars> parse_env(const nlohmann::json& value, const env_limits& limits,
                                  std::string& error);

}  // namespace callisto::gateway::interpreter
