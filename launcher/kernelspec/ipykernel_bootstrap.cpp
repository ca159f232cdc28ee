#include "launcher/kernelspec/ipykernel_bootstrap.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "common/unique_fd.hpp"

namespace callisto::launcher {

namespace {

// `python -m ipykernel...` (ipykernel_launcher, ipykernel).
bool is_ipykernel_command(const std::vector<std::string>& argv) {
    return argv.size() >= 3 && argv[1] == "-m" && argv[2].starts_with("ipykernel");
}

}  // namespace

bool answers_heartbeat_while_busy(const kernelspec& spec) {
    return is_ipykernel_command(spec.argv);
}

spawn_description with_ipykernel_bootstrap(spawn_description what,
                                           const std::filesystem::path& dir) {
    if (!is_ipykernel_command(what.argv)) return what;
    const auto file = dir / "ipykernel_bootstrap.py";
    // Read-only for everyone: the kernel, running as its sandbox uid, reads it once.
    unique_fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
    if (fd.get() < 0)
        throw std::system_error(errno, std::generic_category(), "create " + file.string());
    const std::string source =
        std::string(ipykernel_bootstrap_source()) + "\n_callisto_run_module()\n";
    for (std::size_t done = 0; done < source.size();) {
        const auto n = ::write(fd.get(), source.data() + done, source.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw std::system_error(errno, std::generic_category(), "write " + file.string());
        done += static_cast<std::size_t>(n);
    }
    // The file's path is an argument, not part of the code, so no path needs quoting; only
    // builtins run before the file has put the import path right.
    what.argv[1] = "-c";
    what.argv.insert(
        what.argv.begin() + 2,
        {"import sys; _p = sys.argv.pop(1); exec(compile(open(_p).read(), _p, 'exec'))",
         file.string()});
    return what;
}

}  // namespace callisto::launcher
