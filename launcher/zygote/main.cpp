// callisto-zygote: one per kernelspec, started by the gateway. Imports the kernel's modules
// once, then forks every kernel the gateway orders (see fork_server.hpp and
// launcher/zygote/zygote_protocol.hpp).
//
//   callisto-zygote --control-fd=N --scratch=DIR --python=PROGRAM [--preload=a,b,c]

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/sandbox/seccomp_filter.hpp"
#include "launcher/zygote/fork_server.hpp"
#include "launcher/zygote/jail_init.hpp"
#include "launcher/zygote/page_prefault.hpp"
#include "launcher/zygote/python_runtime.hpp"
#include "launcher/zygote/seqpacket.hpp"

namespace {

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < list.size()) {
        auto end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        if (end > start) out.push_back(list.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace callisto::launcher;
    int control = -1;
    std::string scratch, python, preload;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&](std::string_view name) -> const char* {
            return arg.starts_with(name) ? argv[i] + name.size() : nullptr;
        };
        if (const char* fd = value("--control-fd="))
            control = std::atoi(fd);
        else if (const char* dir = value("--scratch="))
            scratch = dir;
        else if (const char* program = value("--python="))
            python = program;
        else if (const char* modules = value("--preload="))
            preload = modules;
        else {
            std::cerr << "callisto-zygote: unknown argument " << arg << "\n";
            return 2;
        }
    }
    if (control < 3 || scratch.empty() || python.empty()) {
        std::cerr << "usage: callisto-zygote --control-fd=N --scratch=DIR --python=PROGRAM "
                     "[--preload=a,b,c]\n";
        return 2;
    }
    // Each jail's pid 1 (jail_init.hpp), beside this binary; missing, no jailed kernel starts.
    std::error_code ec;
    const auto jail_init = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() /
                           zygote::jail_init_program;
    if (ec || ::access(jail_init.c_str(), X_OK) != 0) {
        std::cerr << "callisto-zygote: cannot run " << jail_init.string() << ": "
                  << (ec ? ec.message() : std::strerror(errno)) << "\n";
        return 1;
    }
    // Exits are read from a signalfd; blocked before anything could fork.
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, nullptr);
    try {
        const seccomp_filter filter;
        // Importing takes a core for a second or two, while kernels already run (or start the
        // usual way meanwhile): at a low priority, then back to normal for the forks, which
        // inherit it.
        ::setpriority(PRIO_PROCESS, 0, 10);
        zygote::python_runtime runtime(python);
        auto ready = runtime.preload(split(preload));
        zygote::page_prefault start_writes(runtime.start_writes());
        ready.prefaulted_pages = start_writes.pages();
        ::setpriority(PRIO_PROCESS, 0, 0);
        if (!send_seqpacket(control, zygote_protocol::encode(ready))) return 1;
        zygote::fork_server server(control, runtime, scratch, filter.bpf(), jail_init,
                                   std::move(start_writes),
                                   std::span<char*>(argv, static_cast<std::size_t>(argc)));
        server.run();
    } catch (const std::exception& e) {
        std::cerr << "callisto-zygote: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
