#include "gateway/languages/r_snapshot.hpp"

#include <doctest/doctest.h>

#include "gateway/languages/kernel_dialect.hpp"
#include "gateway/languages/python_snapshot.hpp"

using namespace callisto::gateway::languages;

TEST_CASE("r snapshot: saving writes the global environment with save() and lists what it cannot") {
    const auto code = r_snapshot::save_code("/work");
    // Into the blob and report the gateway collects, whatever the language.
    CHECK(code.find("base::file.path(\"/work\", \".callisto-snapshot.dill\")") !=
          std::string::npos);
    CHECK(code.find("base::file.path(\"/work\", \".callisto-snapshot.json\")") !=
          std::string::npos);
    CHECK(code.find("base::save(list = base::ls(saved, all.names = TRUE), envir = saved") !=
          std::string::npos);
    // Written whole or not at all: the blob appears by a rename.
    CHECK(code.find("base::file.rename(part, blob)") != std::string::npos);
    // A connection and an external pointer are listed, never silently dropped.
    CHECK(code.find("base::inherits(value, \"connection\")") != std::string::npos);
    CHECK(code.find("\"externalptr\"") != std::string::npos);
    CHECK(code.find("not_carried[base::nrow(not_carried) + 1, ]") != std::string::npos);
    // The attached packages' names go with the values; hidden names (the kernel's .pbd_env,
    // .Random.seed) do not.
    CHECK(code.find("base::.packages()") != std::string::npos);
    CHECK(code.find("base::ls(env, all.names = FALSE, sorted = TRUE)") != std::string::npos);
    // Run in a local environment, silently: nothing is left in the global one.
    CHECK(code.rfind("base::invisible(base::local({\n", 0) == 0);
    CHECK(code.ends_with("}))\n"));
}

TEST_CASE(
    "r snapshot: loading attaches the packages, fills the global environment, removes the "
    "blob") {
    const auto code = r_snapshot::load_code("/tmp/a \"dir\"");
    CHECK(code.find("base::file.path(\"/tmp/a \\\"dir\\\"\", \".callisto-snapshot.dill\")") !=
          std::string::npos);
    CHECK(code.find("base::load(blob, envir = saved)") != std::string::npos);
    CHECK(code.find("base::unlink(blob)") != std::string::npos);
    CHECK(code.find("base::library(p, character.only = TRUE)") != std::string::npos);
    CHECK(code.find("base::list2env(base::as.list(saved, all.names = TRUE), envir = "
                    "base::globalenv())") != std::string::npos);
    CHECK(code.rfind("base::invisible(base::local({\n", 0) == 0);
}

TEST_CASE("state code: Python and R kernels save and load their state, others have none") {
    CHECK(state_save_code(kernel_dialect::python, "/w") == python_snapshot::save_code("/w"));
    CHECK(state_load_code(kernel_dialect::python, "/w") == python_snapshot::load_code("/w"));
    CHECK(state_save_code(kernel_dialect::r, "/w") == r_snapshot::save_code("/w"));
    CHECK(state_load_code(kernel_dialect::r, "/w") == r_snapshot::load_code("/w"));
    CHECK_FALSE(state_save_code(kernel_dialect::other, "/w").has_value());
    CHECK_FALSE(state_load_code(kernel_dialect::other, "/w").has_value());
}
