#pragma once
// The language a kernel speaks, as far as the gateway has to speak it too: the few requests the
// gateway sends a kernel on its own behalf (change into the workdir, set and restore an
// execution's environment variables, reset a kernel kept for reuse) are code in the kernel's
// language. Each dialect writes them in its own file (python_dialect.cpp, r_dialect.cpp). Pure,
// so every line is unit-tested.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace callisto::gateway::languages {

enum class kernel_dialect {
    python,  // ipykernel (IPython)
    r,       // IRkernel
    other,   // any other kernelspec: runs its own code, none of the gateway's
};

// From a kernelspec's "language" ("python", "R"), case-insensitively.
kernel_dialect dialect_of(std::string_view kernelspec_language);
std::string_view to_string(kernel_dialect d);

using env_vars = std::vector<std::pair<std::string, std::string>>;  // sorted by name

// Code for a silent execute_request, or nullopt where the dialect has none (`other`).
// Changes the kernel's working directory to `path`.
std::optional<std::string> chdir_code(kernel_dialect d, const std::string& path);
// Sets HOME to `path` for the code and what it starts (E2B's /home/user).
std::optional<std::string> home_code(kernel_dialect d, const std::string& path);
// Remembers the current values of the names (absent ones too), out of the user's sight, and
// sets the new ones; env_restore_code puts back what was remembered, and does nothing when
// nothing was (after a restart).
std::optional<std::string> env_apply_code(kernel_dialect d, const env_vars& vars);
std::optional<std::string> env_restore_code(kernel_dialect d);
// Before a kernel is kept for its owner's next context: closes figures, changes into `workdir`
// (as the kernel sees it), empties it when `wipe`, and clears the user's namespace.
std::optional<std::string> reset_code(kernel_dialect d, const std::string& workdir, bool wipe);

// The code a kernel runs to save its user state into the workdir (as the kernel sees it) for a
// snapshot, and to load it back (python_snapshot.hpp, r_snapshot.hpp); nullopt for `other`,
// whose state the gateway cannot save (only its files are kept).
std::optional<std::string> state_save_code(kernel_dialect d, const std::string& workdir);
std::optional<std::string> state_load_code(kernel_dialect d, const std::string& workdir);

// Whether the kernel's reply to a silent execute_request says "error" when the code failed.
// IRkernel answers "ok" to every silent request, so a request whose outcome matters (the reset
// of a kept kernel) goes to it unsilenced (its iopub output then has no one to reach).
bool silent_requests_report_errors(kernel_dialect d);

// A string literal of both Python and R: JSON's escapes (\" \\ \n \t \uXXXX) are theirs too,
// and the text stays UTF-8 (ensure_ascii would split characters outside the BMP into
// surrogates, which neither joins again). NUL must not occur (neither language takes it).
std::string string_literal(const std::string& s);

}  // namespace callisto::gateway::languages
