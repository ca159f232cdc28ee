#include "gateway/languages/execution_language.hpp"

#include <algorithm>
#include <cctype>

#include "gateway/languages/runner_sources.hpp"

namespace callisto::gateway::languages {

namespace {

constexpr std::string_view shell_module = "_callisto_shell";
constexpr std::string_view sql_module = "_callisto_sql";

// Loads the runner as a module, once per kernel process (sys.modules keeps it, so a SQL
// connection and the tables it loaded outlive the execution). Sent silently, before the run,
// so that the user's cell (and any traceback) shows one short line, not the runner's source.
std::string runner_load(std::string_view module, std::string_view source) {
    const std::string name = string_literal(std::string(module));
    return "(lambda s, n: n in s.modules or s.modules.setdefault(n, (lambda m: (exec(compile(" +
           string_literal(std::string(source)) + ", " +
           string_literal("<callisto " + std::string(module) + ">") +
           ", 'exec'), m.__dict__), m)[1])(__import__('types').ModuleType(n))))"
           "(__import__('sys'), " +
           name + ")\n";
}

// One expression, returning None: nothing is echoed, no name lands in the user's namespace.
std::string runner_call(std::string_view module, const std::string& code) {
    return "__import__('sys').modules[" + string_literal(std::string(module)) + "].run(" +
           string_literal(code) + ")\n";
}

}  // namespace

std::optional<execution_language> parse_execution_language(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (auto l : all_execution_languages())
        if (to_string(l) == lower) return l;
    return std::nullopt;
}

std::string_view to_string(execution_language l) {
    switch (l) {
        case execution_language::python: return "python";
        case execution_language::r: return "r";
        case execution_language::bash: return "bash";
        case execution_language::sql: return "sql";
    }
    return "python";
}

const std::vector<execution_language>& all_execution_languages() {
    static const std::vector<execution_language> all = {
        execution_language::python, execution_language::r, execution_language::bash,
        execution_language::sql};
    return all;
}

std::vector<execution_language> languages_run_by(kernel_dialect d) {
    switch (d) {
        case kernel_dialect::python:
            return {execution_language::python, execution_language::bash, execution_language::sql};
        case kernel_dialect::r: return {execution_language::r};
        case kernel_dialect::other: break;
    }
    return {};
}

std::vector<std::string> language_names(const std::vector<execution_language>& languages) {
    std::vector<std::string> names;
    for (auto l : languages) names.emplace_back(to_string(l));
    return names;
}

std::string language_list(char quote) {
    const auto names = language_names(all_execution_languages());
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i)
        out += std::string(i == 0                  ? ""
                           : i + 1 == names.size() ? " or "
                                                   : ", ") +
               quote + names[i] + quote;
    return out;
}

std::optional<std::string> kernel_code_for(execution_language language, kernel_dialect d,
                                           const std::string& code) {
    const auto runs = languages_run_by(d);
    if (std::find(runs.begin(), runs.end(), language) == runs.end()) return std::nullopt;
    if (d == kernel_dialect::python) {
        if (language == execution_language::bash) return runner_call(shell_module, code);
        if (language == execution_language::sql) return runner_call(sql_module, code);
    }
    return code;  // the kernel's own language
}

std::optional<std::string> runner_setup_code(execution_language language, kernel_dialect d) {
    if (d != kernel_dialect::python) return std::nullopt;
    if (language == execution_language::bash)
        return runner_load(shell_module, shell_runner_source());
    if (language == execution_language::sql) return runner_load(sql_module, sql_runner_source());
    return std::nullopt;
}

}  // namespace callisto::gateway::languages
