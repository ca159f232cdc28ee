#pragma once
// A workdir with a secret beside it, outside: for the checks that a path given to a workdir's
// files never reaches out of it (traversal, links), in the interpreter's and in envd's.

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.hpp"

namespace callisto::test {

struct workdir_beside_a_secret {
    temp_dir base;
    std::filesystem::path root = base.path() / "work";
    std::filesystem::path outside = base.path() / "outside";  // holds secret.txt, "secret"

    workdir_beside_a_secret() {
        std::filesystem::create_directories(root);
        std::filesystem::create_directories(outside);
        std::ofstream(outside / "secret.txt") << "secret";
    }
};

}  // namespace callisto::test
