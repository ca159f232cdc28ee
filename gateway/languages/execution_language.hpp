#pragma once
// The languages an execution may be written in ("language" in /v1 and MCP run_code), what a
// kernel of each dialect runs, and the code the kernel is sent for it. A kernel runs its own
// language as it is; a Python kernel also runs shell scripts and SQL through the runners in
// runners/ (shell_runner.py, sql_runner.py), loaded into it as modules of their own, so they
// run in the context's kernel, sandbox, workdir and limits, with nothing new to escape through.
// The user's cell is then one line: `__import__('sys').modules['_callisto_sql'].run("...")`.
// Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/languages/kernel_dialect.hpp"

namespace callisto::gateway::languages {

enum class execution_language { python, r, bash, sql };

// "python", "r", "bash", "sql", case-insensitively ("R" as kernelspecs spell it).
std::optional<execution_language> parse_execution_language(std::string_view name);
std::string_view to_string(execution_language l);
// Every language, in the order documented.
const std::vector<execution_language>& all_execution_languages();

// What a kernel of the dialect runs, its own language first; none for `other`, which runs
// only requests that name no language.
std::vector<execution_language> languages_run_by(kernel_dialect d);
std::vector<std::string> language_names(const std::vector<execution_language>& languages);
// Every language for an error message, each in `quote`: 'python', 'r', 'bash' or 'sql'.
std::string language_list(char quote);

// The code to send a kernel of dialect `d` for `code` written in `language`, or nullopt when
// it does not run that language.
std::optional<std::string> kernel_code_for(execution_language language, kernel_dialect d,
                                           const std::string& code);
// What must run first, silently, for kernel_code_for's code to work (loading a runner, a
// no-op once loaded), or nullopt when nothing must.
std::optional<std::string> runner_setup_code(execution_language language, kernel_dialect d);

}  // namespace callisto::gateway::languages
