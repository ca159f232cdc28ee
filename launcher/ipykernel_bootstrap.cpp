#include "launcher/ipykernel_bootstrap.hpp"

namespace callisto::launcher {

bool runs_ipykernel(const spawn_description& what) {
    return what.argv.size() >= 3 && what.argv[1] == "-m" && what.argv[2].starts_with("ipykernel");
}

spawn_description with_ipykernel_bootstrap(spawn_description what) {
    if (!runs_ipykernel(what)) return what;
    what.argv[1] = "-c";
    what.argv.insert(what.argv.begin() + 2,
                     std::string(ipykernel_bootstrap_source()) + "\n_callisto_run_module()\n");
    return what;
}

}  // namespace callisto::launcher
