#pragma once
// Blanks a program's arguments where /proc/<pid>/cmdline reads them (argv[0] stays, for ps):
// inside a jail the kernel reads its pid 1's, and a fork's own are the zygote's, and both
// named host paths (the zygote's scratch directory under --runtime-dir). Called once the
// arguments are parsed; the program keeps its own copies.

#include <cstring>

namespace callisto::launcher::zygote {

inline void blank_arguments(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) std::memset(argv[i], 0, std::strlen(argv[i]));
}

}  // namespace callisto::launcher::zygote
