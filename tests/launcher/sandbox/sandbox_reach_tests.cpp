// The start-up check that sandbox uids can reach the gateway's directories.

#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "launcher/sandbox/sandbox_probe.hpp"

using callisto::launcher::sandbox_probe;
namespace fs = std::filesystem;

namespace {

struct temp_tree {
    fs::path root =
        fs::temp_directory_path() / ("callisto-reach-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    temp_tree() { fs::create_directories(root); }
    ~temp_tree() {
        std::error_code ec;
        fs::permissions(root, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(root, ec);
    }
};

}  // namespace

TEST_CASE("a directory every sandbox uid can search down to is reachable, made or not") {
    temp_tree t;
    fs::permissions(t.root, fs::perms::owner_all | fs::perms::others_exec);
    CHECK(sandbox_probe::unreachable_by_sandbox(t.root, "--workdir-root") == "");
    CHECK(sandbox_probe::unreachable_by_sandbox(t.root / "not" / "made" / "yet",
                                                "--workdir-root") == "");
}

TEST_CASE("a directory on the way that others cannot search is named, with its mode") {
    temp_tree t;
    fs::create_directories(t.root / "work");
    fs::permissions(t.root, fs::perms::owner_all);  // 0700, as mktemp -d makes it
    const auto why = sandbox_probe::unreachable_by_sandbox(t.root / "work", "--workdir-root");
    INFO(why);
    CHECK(why.find("--workdir-root " + (t.root / "work").string()) == 0);
    CHECK(why.find(t.root.string() + " (mode 0700) is not searchable by other users") !=
          std::string::npos);
    CHECK(why.find("chmod o+x") != std::string::npos);
}

TEST_CASE("a file where a directory should be is named") {
    temp_tree t;
    fs::permissions(t.root, fs::perms::owner_all | fs::perms::others_exec);
    std::ofstream(t.root / "file") << "x";
    const auto why =
        sandbox_probe::unreachable_by_sandbox(t.root / "file" / "work", "--runtime-dir");
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
