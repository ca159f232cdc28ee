#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "gateway/languages/execution_language.hpp"

using namespace callisto::gateway::languages;

namespace {

// Runs `code` in Debian's Python in `dir`; returns what it printed (stdout and stderr).
std::string run_python(const std::string& code, const std::filesystem::path& dir) {
    const auto script = dir / "callisto-test-code.py";
    std::ofstream(script) << code;
    const std::string command =
        "cd '" + dir.string() + "' && " + CALLISTO_TEST_PYTHON + " '" + script.string() + "' 2>&1";
    std::string out;
    if (FILE* p = ::popen(command.c_str(), "r")) {
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
        ::pclose(p);
    }
    std::filesystem::remove(script);
    return out;
}

}  // namespace

TEST_CASE("language names: the four, case-insensitively; nothing else") {
    CHECK(parse_execution_language("python") == execution_language::python);
    CHECK(parse_execution_language("R") == execution_language::r);
    CHECK(parse_execution_language("BASH") == execution_language::bash);
    CHECK(parse_execution_language("sql") == execution_language::sql);
    for (const char* bad : {"", "sh", "ruby", "python3", " sql", "sql "}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_execution_language(bad));
    }
    for (auto l : all_execution_languages()) CHECK(parse_execution_language(to_string(l)) == l);
    CHECK(language_list('\'') == "'python', 'r', 'bash' or 'sql'");
    CHECK(language_list('"') == R"("python", "r", "bash" or "sql")");
}

TEST_CASE("what each dialect runs: Python also bash and sql, R its own, others nothing named") {
    CHECK(language_names(languages_run_by(kernel_dialect::python)) ==
          std::vector<std::string>{"python", "bash", "sql"});
    CHECK(language_names(languages_run_by(kernel_dialect::r)) == std::vector<std::string>{"r"});
    CHECK(languages_run_by(kernel_dialect::other).empty());
}

TEST_CASE("kernel code: a kernel's own language as it is; bash and sql through a runner") {
    CHECK(kernel_code_for(execution_language::python, kernel_dialect::python, "1 +\n1") ==
          "1 +\n1");
    CHECK(kernel_code_for(execution_language::r, kernel_dialect::r, "c(1)") == "c(1)");
    CHECK_FALSE(kernel_code_for(execution_language::sql, kernel_dialect::r, "SELECT 1"));
    CHECK_FALSE(kernel_code_for(execution_language::r, kernel_dialect::python, "c(1)"));
    CHECK_FALSE(kernel_code_for(execution_language::python, kernel_dialect::other, "1"));
    auto bash = kernel_code_for(execution_language::bash, kernel_dialect::python, "echo \"hi\"\n");
    REQUIRE(bash);
    CHECK(*bash == R"(__import__('sys').modules["_callisto_shell"].run("echo \"hi\"\n"))"
                   "\n");
    auto setup = runner_setup_code(execution_language::bash, kernel_dialect::python);
    REQUIRE(setup);
    CHECK(setup->find("Callisto's shell runner") != std::string::npos);  // the module's source
    CHECK(setup->find('\n') == setup->size() - 1);                       // one line
    CHECK(runner_setup_code(execution_language::sql, kernel_dialect::python));
    CHECK_FALSE(runner_setup_code(execution_language::python, kernel_dialect::python));
    CHECK_FALSE(runner_setup_code(execution_language::r, kernel_dialect::r));
    CHECK_FALSE(runner_setup_code(execution_language::sql, kernel_dialect::r));
}

TEST_CASE("kernel code runs in Python: the runners load once and run bash and SQL") {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("callisto-languages-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "sales.csv") << "city,amount\nParis,10.5\nLyon,3\nParis,4\n";
    const auto load = *runner_setup_code(execution_language::sql, kernel_dialect::python) +
                      *runner_setup_code(execution_language::bash, kernel_dialect::python);
    const auto sql = *kernel_code_for(execution_language::sql, kernel_dialect::python,
                                      "SELECT city, SUM(amount) AS total FROM sales "
                                      "GROUP BY city ORDER BY 2 DESC");
    const auto bash = *kernel_code_for(execution_language::bash, kernel_dialect::python,
                                       "echo out; echo err >&2; ls *.csv");
    // Twice each: the second load finds the module loaded. Without IPython's display hook,
    // publish_display_data prints nothing, so the module's table function is called directly.
    const std::string program =
        "import sys\n"
        "import IPython.display\n"
        "IPython.display.publish_display_data = lambda data, **k: print(data['text/plain'])\n" +
        load + sql + load + sql + bash + bash +
        "print(sorted(m for m in sys.modules if m.startswith('_callisto')))\n";
    const auto out = run_python(program, dir);
    INFO(out);
    CHECK(out.find("Paris | 14.5") != std::string::npos);
    CHECK(out.find("(2 rows)") != std::string::npos);
    CHECK(out.find("out\n") != std::string::npos);
    CHECK(out.find("err\n") != std::string::npos);
    CHECK(out.find("sales.csv") != std::string::npos);
    CHECK(out.find("['_callisto_shell', '_callisto_sql']") != std::string::npos);
    std::filesystem::remove_all(dir);
}
