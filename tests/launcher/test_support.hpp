#pragma once
// Small helpers shared by the launcher tests: temporary directories, environment overrides,
// files, and polling for a condition instead of sleeping a fixed time.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/support/eventually.hpp"
#include "tests/support/temp_dir.hpp"

namespace callisto::launcher::test {

// The scratch directory and the polling the transport tests use too.
using callisto::test::eventually;
using callisto::test::temp_dir;

// Sets (or with nullopt unsets) one environment variable and restores it on destruction.
class env_override {
public:
    env_override(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
        if (const char* old = std::getenv(name_.c_str())) old_ = old;
        if (value)
            ::setenv(name_.c_str(), value->c_str(), 1);
        else
            ::unsetenv(name_.c_str());
    }
    ~env_override() {
        if (old_)
            ::setenv(name_.c_str(), old_->c_str(), 1);
        else
            ::unsetenv(name_.c_str());
    }
    env_override(const env_override&) = delete;
    env_override& operator=(const env_override&) = delete;

private:
    std::string name_;
    std::optional<std::string> old_;
};

inline void write_file(const std::filesystem::path& file, const std::string& content) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + file.string());
}

inline std::string read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return std::move(bytes).str();
}

}  // namespace callisto::launcher::test
