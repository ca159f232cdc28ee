#include "launcher/ipykernel_bootstrap.hpp"

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

spawn_description with_ipykernel_bootstrap(spawn_description what) {
    if (!is_ipykernel_command(what.argv)) return what;
    what.argv[1] = "-c";
    what.argv.insert(what.argv.begin() + 2,
                     std::string(ipykernel_bootstrap_source()) + "\n_callisto_run_module()\n");
    return what;
}

}  // namespace callisto::launcher
