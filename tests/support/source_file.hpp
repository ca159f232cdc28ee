#pragma once
// A file of the source tree as a test reads it: a document the code must agree with, or a
// source scanned for what it declares.

#include <fstream>
#include <sstream>
#include <string>

namespace callisto::test {

// The whole of the file at `relative` to the source root (CALLISTO_SOURCE_DIR, which every
// test executable is compiled with); "" when it cannot be read.
inline std::string source_file(const std::string& relative) {
    std::ifstream in(std::string(CALLISTO_SOURCE_DIR) + "/" + relative, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace callisto::test
