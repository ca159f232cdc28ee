#pragma once
// A scratch directory for the tests: made fresh, removed with everything in it.

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace callisto::test {

// A fresh directory under /tmp, removed with its contents. Short on purpose: ipc paths and
// Unix socket paths are limited to 107 characters.
class temp_dir {
public:
    temp_dir() {
        std::string pattern = "/tmp/cl-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~temp_dir() {
        // A test may have taken the owner's permissions away (a mode it checks); given back,
        // the directory can be removed whoever runs the tests.
        std::error_code ec;
        std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

}  // namespace callisto::test
