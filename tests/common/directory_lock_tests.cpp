#include "common/directory_lock.hpp"

#include <unistd.h>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <doctest/doctest.h>

namespace fs = std::filesystem;

TEST_CASE("a directory lock is held by one holder at a time") {
    const auto dir = fs::temp_directory_path() / ("callisto-dirlock-" + std::to_string(::getpid()));
    {
        callisto::directory_lock first(dir, "--state-dir");
        CHECK_THROWS_WITH_AS(callisto::directory_lock(dir, "--state-dir"),
                             ("another callisto instance uses --state-dir " + dir.string()).c_str(),
                             std::runtime_error);
    }
    callisto::directory_lock again(dir, "--state-dir");  // released with its holder
    fs::remove_all(dir);
}
