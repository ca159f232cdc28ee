// callisto-jail-init: the pid 1 of a zygote kernel's jail (jail_init.hpp). A program of its
// own, and a small one, because every sandboxed kernel start execs it: 1.0 ms of CPU from exec
// to exit, against 3.9 for callisto-zygote, which loads libpython (perf stat -r 20).
//
//   callisto-jail-init --scratch=DIR --kernel=PID   (exec'd by the zygote's vfork child)

#include <cstdlib>
#include <iostream>
#include <string_view>

#include "launcher/zygote/jail_init.hpp"

int main(int argc, char** argv) {
    constexpr std::string_view scratch = "--scratch=", kernel = "--kernel=";
    if (argc != 3 || !std::string_view(argv[1]).starts_with(scratch) ||
        !std::string_view(argv[2]).starts_with(kernel)) {
        std::cerr << "usage: callisto-jail-init --scratch=DIR --kernel=PID (started by "
                     "callisto-zygote, not by hand)\n";
        return 2;
    }
    callisto::launcher::zygote::run_jail_init(argv[1] + scratch.size(),
                                              std::atol(argv[2] + kernel.size()));
}
