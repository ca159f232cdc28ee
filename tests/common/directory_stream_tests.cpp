#include "common/directory_stream.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using callisto::directory_stream;
using callisto::unique_fd;
using callisto::test::temp_dir;

namespace {

std::vector<std::string> names_of(directory_stream& listing) {
    std::vector<std::string> names;
    while (const dirent* e = listing.next()) names.emplace_back(e->d_name);
    std::sort(names.begin(), names.end());
    return names;
}

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

}  // namespace

TEST_CASE("a directory stream lists the entries and closes the descriptor it took") {
    temp_dir dir;
    std::ofstream(dir.path() / "a") << "x";
    fs::create_directory(dir.path() / "b");
    unique_fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    const int number = fd.get();
    {
        directory_stream listing(std::move(fd));
        CHECK(names_of(listing) == std::vector<std::string>{".", "..", "a", "b"});
        CHECK(listing.next() == nullptr);
        CHECK(is_open(number));
    }
    CHECK_FALSE(is_open(number));
}

TEST_CASE("a descriptor that is no directory is closed too, and lists nothing") {
    temp_dir dir;
    std::ofstream(dir.path() / "file") << "x";
    unique_fd fd(::open((dir.path() / "file").c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd);
    const int number = fd.get();
    {
        directory_stream listing(std::move(fd));  // fdopendir fails: ENOTDIR
        CHECK(listing.next() == nullptr);
    }
    CHECK_FALSE(is_open(number));
}

TEST_CASE("a stream of a copy leaves the caller's descriptor open") {
    temp_dir dir;
    std::ofstream(dir.path() / "only") << "x";
    const unique_fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
    {
        auto listing = directory_stream::of_copy(fd.get());
        CHECK(names_of(listing) == std::vector<std::string>{".", "..", "only"});
    }
    CHECK(is_open(fd.get()));
    CHECK(::faccessat(fd.get(), "only", F_OK, 0) == 0);  // still usable
}
