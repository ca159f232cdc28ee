// callisto-load: a load generator for Callisto and other Jupyter-compatible gateways
// (load_options.cpp has its usage). The README shows how to load-test a deployment with it.

#include <fstream>
#include <iostream>

#include "load_run.hpp"

int main(int argc, char** argv) {
    using namespace callisto::load;
    auto parsed = parse_load_options(std::vector<std::string>(argv + 1, argv + argc));
    if (!parsed.options) {
        (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message << "\n";
        return parsed.exit_code;
    }
    load_run run(*parsed.options);
    if (auto why = run.run(); !why.empty()) {
        std::cerr << "callisto-load: " << why << "\n";
        return 2;
    }
    std::cout << report_table(run.stats(), run.options(), run.elapsed_seconds()) << std::flush;
    if (!parsed.options->json_file.empty()) {
        std::ofstream out(parsed.options->json_file);
        out << report_json(run.stats(), run.options(), run.elapsed_seconds()).dump(2) << "\n";
        if (!out) {
            std::cerr << "callisto-load: cannot write " << parsed.options->json_file << "\n";
            return 2;
        }
    }
    return run.stats().clean() ? 0 : 1;
}
