// The start-up check that sandbox uids can reach the gateway's directories.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "launcher/sandbox/sandbox_probe.hpp"
#include "tests/support/temp_dir.hpp"

using callisto::launcher::sandbox_probe;
using callisto::test::temp_dir;
namespace fs = std::filesystem;

TEST_CASE("a directory every sandbox uid can search down to is reachable, made or not") {
    temp_dir t;
    fs::permissions(t.path(), fs::perms::owner_all | fs::perms::others_exec);
    CHECK(sandbox_probe::unreachable_by_sandbox(t.path(), "--workdir-root") == "");
    CHECK(sandbox_probe::unreachable_by_sandbox(t.path() / "not" / "made" / "yet",
                                                "--workdir-root") == "");
}

TEST_CASE("a directory on the way that others cannot search is named, with its mode") {
    temp_dir t;
    fs::create_directories(t.path() / "work");
    fs::permissions(t.path(), fs::perms::owner_all);  // 0700, as mktemp -d makes it
    const auto why = sandbox_probe::unreachable_by_sandbox(t.path() / "work", "--workdir-root");
    INFO(why);
    CHECK(why.find("--workdir-root " + (t.path() / "work").string()) == 0);
    CHECK(why.find(t.path().string() + " (mode 0700) is not searchable by other users") !=
          std::string::npos);
    CHECK(why.find("chmod o+x") != std::string::npos);
}

TEST_CASE("a file where a directory should be is named") {
    temp_dir t;
    fs::permissions(t.path(), fs::perms::owner_all | fs::perms::others_exec);
    std::ofstream(t.path() / "file") << "x";
    const auto why =
        sandbox_probe::unreachable_by_sandbox(t.path() / "file" / "work", "--runtime-dir");
    CHECK(why.find("is not a directory") != std::string::npos);
}

TEST_CASE("the sandbox's need for root is said once, naming the uid, and root has none") {
    CHECK(sandbox_probe::privilege_problem(0).empty());
    const auto problem = sandbox_probe::privilege_problem(1000);
    INFO(problem);
    CHECK(problem.find("needs root") != std::string::npos);
    CHECK(problem.find("uid 1000") != std::string::npos);
    // The server adds the one note on --sandbox=off; the probe says nothing of it.
    CHECK(problem.find("--sandbox=off") == std::string::npos);
    CHECK(problem.find("development only") == std::string::npos);
}
