#include "launcher/ipykernel_bootstrap.hpp"

namespace callisto::launcher {

namespace {

bool is_ipykernel_command(const std::vector<std::string>& argv) {
    return argv.size() >= 3 && argv[1] == "-m" && argv[2].starts_with("ipykernel");
}

}  // namespace

bool runs_ipykernel(const spawn_description& what) { return is_ipykernel_command(what.argv); }

bool answers_heartbeat_while_busy(const kernelspec& spec) {
    return is_ipykernel_command(spec.argv);
}

spawn_description with_ipykernel_bootstrap(spawn_description what) {
    if (!runs_ipykernel(what)) return what;
    what.argv[1] = "-c";
    what.argv.insert(what.argv.begin() + 2,
                     std::string(ipykernel_bootstrap_source()) + "\n_callisto_run_module()\n");
    return what;
}

}  // namespace callisto::launcher
