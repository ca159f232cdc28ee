#include "common/record_directory.hpp"

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

namespace fs = std::filesystem;

TEST_CASE("a record directory drops the temporary file of a save a crash interrupted") {
    const auto dir = fs::temp_directory_path() / ("callisto-records-" + std::to_string(::getpid()));
    {
        callisto::record_directory records(dir, "kernel", callisto::record_directory::sync::never,
                                           {});
        CHECK(records.save("0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11", "{}") == "");
        std::ofstream(dir / ".0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11.json.tmp") << "{\"half";
        const auto loaded = records.load();
        REQUIRE(loaded.size() == 1);
        CHECK(loaded[0].text == "{}");
        CHECK_FALSE(fs::exists(dir / ".0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11.json.tmp"));
        CHECK(records.save("../../etc/passwd", "x").find("not a kernel id") == 0);
    }
    fs::remove_all(dir);
}
