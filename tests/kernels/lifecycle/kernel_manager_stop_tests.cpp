// The gateway's stop of every kernel (kernel_manager::shutdown_all): it ends when the last
// kernel's exit is reported, and no later than the longest stop and a margin when one never is.

#include "gateway/kernels/lifecycle/kernel_manager.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "launcher/kernelspec/kernelspec_catalog.hpp"
#include "tests/kernels/kernel_fakes.hpp"

using namespace callisto::gateway::kernels;
using namespace callisto::gateway::kernels::test;
using namespace std::chrono_literals;

namespace {

// A manager of one python3 kernelspec, with one kernel started (its fake process running).
struct one_kernel {
    fake_world w;
    std::unique_ptr<callisto::launcher::kernelspec_catalog> catalog;
    std::unique_ptr<kernel_manager> kernels;
    pid_t pid = 0;

    one_kernel() {
        w.env.settings.kill_grace = 50ms;
        w.env.settings.stop_margin = 300ms;
        const auto dir = w.root / "kernels" / "python3";
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "kernel.json")
            << R"({"argv": ["/usr/bin/python3", "-f", "{connection_file}"], "display_name": "P"})";
        catalog = std::make_unique<callisto::launcher::kernelspec_catalog>(
            std::vector<std::filesystem::path>{w.root / "kernels"});
        kernels = std::make_unique<kernel_manager>(w.env, *catalog);
        create_kernel_request request;
        request.name = "python3";
        request.owner = callisto::gateway::user{.name = "ana"};
        kernels->create(std::move(request), [](create_kernel_result) {});
        REQUIRE(w.run_until([&] { return !w.processes.spawned.empty(); }));
        pid = w.processes.spawned.front().pid;
    }
};

}  // namespace

TEST_CASE_FIXTURE(one_kernel, "a stop ends once the last kernel's exit is reported") {
    bool stopped = false;
    kernels->shutdown_all([&] { stopped = true; });
    REQUIRE(w.run_until([&] { return !w.processes.terminations.empty(); }));
    CHECK(w.processes.terminations.front().first == pid);
    CHECK_FALSE(stopped);  // terminated, not yet reported gone
    w.processes.exit(pid, 0);
    CHECK(w.run_until([&] { return stopped; }));
    CHECK(kernels->list().empty());
}

TEST_CASE_FIXTURE(one_kernel, "a stop whose kernel's exit is never reported ends all the same") {
    int stopped = 0;
    kernels->shutdown_all([&] { ++stopped; });
    // kill_grace and stop_margin on (shutdown_wait is not waited for: the kernel never
    // connected, so it is not asked first), the stop gives up on it.
    CHECK(w.run_until([&] { return stopped > 0; }));
    CHECK(kernels->list().size() == 1);  // still there: its end was never seen
    // A late exit does not end the stop a second time.
    w.processes.exit(pid, 0);
    w.settle();
    CHECK(stopped == 1);
}
