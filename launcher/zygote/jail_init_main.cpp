// callisto-jail-init: the pid 1 of a zygote kernel's jail (jail_init.hpp). A program of its
// own, and a small one, because every sandboxed kernel start execs it: 1.0 ms of CPU from exec
// to exit, against 3.9 for callisto-zygote, which loads libpython (perf stat -r 20).
//
//   callisto-jail-init --scratch=DIR --kernel=PID   (exec'd by the zygote's vfork child)

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "launcher/zygote/blank_arguments.hpp"
#include "launcher/zygote/jail_init.hpp"

int main(int argc, char** argv) {
    constexpr std::string_view scratch = "--scratch=", kernel = "--kernel=";
    if (argc != 3 || !std::string_view(argv[1]).starts_with(scratch) ||
        !std::string_view(argv[2]).starts_with(kernel)) {
        std::cerr << "usage: callisto-jail-init --scratch=DIR --kernel=PID (started by "
                     "callisto-zygote, not by hand)\n";
        return 2;
    }
    const std::filesystem::path scratch_dir = argv[1] + scratch.size();
    const long kernel_pid = std::atol(argv[2] + kernel.size());
    // The kernel reads /proc/1/cmdline: no host path there (its pid waits for the jail).
    callisto::launcher::zygote::blank_arguments(argc, argv);
    callisto::launcher::zygote::run_jail_init(scratch_dir, kernel_pid);
}
