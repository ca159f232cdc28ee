#include <doctest/doctest.h>

#include "gateway/languages/kernel_dialect.hpp"

using namespace callisto::gateway::languages;

TEST_CASE("dialect: from the kernelspec's language, case-insensitively") {
    CHECK(dialect_of("python") == kernel_dialect::python);
    CHECK(dialect_of("Python") == kernel_dialect::python);
    CHECK(dialect_of("R") == kernel_dialect::r);
    CHECK(dialect_of("r") == kernel_dialect::r);
    CHECK(dialect_of("julia") == kernel_dialect::other);
    CHECK(dialect_of("") == kernel_dialect::other);
    CHECK(to_string(kernel_dialect::r) == "r");
}

TEST_CASE("string literals: JSON's escapes, UTF-8 kept whole") {
    CHECK(string_literal("a\"b\\c\n") == R"("a\"b\\c\n")");
    CHECK(string_literal("😀") == "\"😀\"");  // not a surrogate pair
    CHECK(string_literal("\x01") == R"("\u0001")");
}

TEST_CASE("python dialect: env set from literals, one line, restored from what it saved") {
    auto code = env_apply_code(kernel_dialect::python, {{"A", "x\"y\\z\n"}, {"EMOJI", "😀"}});
    REQUIRE(code);
    CHECK(code->find(R"("A": "x\"y\\z\n")") != std::string::npos);
    CHECK(code->find("\"EMOJI\": \"😀\"") != std::string::npos);
    CHECK(code->find("_callisto_saved_env") != std::string::npos);
    CHECK(code->find('\n') == code->size() - 1);  // one line: no line of the user's shifts
    auto restore = env_restore_code(kernel_dialect::python);
    REQUIRE(restore);
    CHECK(restore->find("pop('_callisto_saved_env', {})") != std::string::npos);
    CHECK(*home_code(kernel_dialect::python, "/home/\"u\"") ==
          "__import__('os').environ['HOME'] = \"/home/\\\"u\\\"\"\n");
}

TEST_CASE("r dialect: env through Sys.setenv, saved in options(), everything invisible") {
    // Every call names its package: the user's global environment may shadow any of them.
    auto code = env_apply_code(kernel_dialect::r, {{"A", "x\"y"}, {"B", ""}});
    REQUIRE(code);
    CHECK(code->starts_with("base::invisible(base::local({"));
    CHECK(code->find(R"(base::c("A", "B"))") != std::string::npos);
    CHECK(code->find(R"(base::c("x\"y", ""))") != std::string::npos);
    CHECK(code->find("base::options(callisto.saved_env") != std::string::npos);
    CHECK(code->find("unset = NA") != std::string::npos);
    auto restore = env_restore_code(kernel_dialect::r);
    REQUIRE(restore);
    CHECK(restore->find("base::Sys.unsetenv(n)") != std::string::npos);
    CHECK(restore->find("base::options(callisto.saved_env = NULL)") != std::string::npos);
    CHECK(*chdir_code(kernel_dialect::r, "/w \"x\"") ==
          "base::invisible(base::setwd(\"/w \\\"x\\\"\"))\n");
    CHECK(*home_code(kernel_dialect::r, "/home/user") ==
          "base::invisible(base::Sys.setenv(HOME = \"/home/user\"))\n");
}

TEST_CASE("reset: each dialect clears its namespace; the workdir is emptied only with wipe") {
    auto py = reset_code(kernel_dialect::python, "/work", true);
    REQUIRE(py);
    CHECK(py->find("chdir(\"/work\")") != std::string::npos);
    CHECK(py->find("reset(new_session=True") != std::string::npos);
    CHECK(py->find("rmtree") != std::string::npos);
    CHECK(reset_code(kernel_dialect::python, "/c", false)->find("rmtree") == std::string::npos);
    auto r = reset_code(kernel_dialect::r, "/work", true);
    REQUIRE(r);
    CHECK(r->find("base::setwd(\"/work\")") != std::string::npos);
    CHECK(r->find("base::rm(list = base::ls(envir = base::globalenv(), all.names = TRUE)") !=
          std::string::npos);
    CHECK(r->find("graphics.off()") != std::string::npos);
    CHECK(r->find("unlink(") != std::string::npos);
    CHECK(reset_code(kernel_dialect::r, "/c", false)->find("unlink(") == std::string::npos);
}

TEST_CASE("silent requests: only IRkernel hides their errors") {
    CHECK(silent_requests_report_errors(kernel_dialect::python));
    CHECK_FALSE(silent_requests_report_errors(kernel_dialect::r));
}

TEST_CASE("other dialects: the gateway writes nothing for them") {
    CHECK_FALSE(chdir_code(kernel_dialect::other, "/work"));
    CHECK_FALSE(home_code(kernel_dialect::other, "/home/user"));
    CHECK_FALSE(env_apply_code(kernel_dialect::other, {{"A", "b"}}));
    CHECK_FALSE(env_restore_code(kernel_dialect::other));
    CHECK_FALSE(reset_code(kernel_dialect::other, "/work", true));
}
