#include "common/durable_file.hpp"

#include <unistd.h>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include <doctest/doctest.h>

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return std::move(bytes).str();
}

}  // namespace

TEST_CASE("a durable write replaces the whole file and leaves no temporary file") {
    const auto dir = fs::temp_directory_path() / ("callisto-durable-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto file = dir / "record.json";
    callisto::write_file_durably(file, "first");
    CHECK(read_all(file) == "first");
    callisto::write_file_durably(file, "second, longer");
    CHECK(read_all(file) == "second, longer");
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
    CHECK((fs::status(file).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write));

    callisto::remove_file_durably(file);
    CHECK_FALSE(fs::exists(file));
    callisto::remove_file_durably(file);  // already gone: no error

    CHECK_THROWS_AS(callisto::write_file_durably(dir / "missing" / "x.json", "x"),
                    std::system_error);
    fs::remove_all(dir);
}
