#include "gateway/kernels/lifecycle/kernel_metrics.hpp"

#include <doctest/doctest.h>

using namespace callisto;
using callisto::gateway::kernels::kernel_metrics;

TEST_CASE("the kernels' counters are exported at zero before their first event") {
    metrics::registry r;
    kernel_metrics m(r);
    m.known_kernelspec("python3");
    m.known_kernelspec("ir");
    const auto text = r.render();
    INFO(text);
    for (const char* series : {"callisto_kernel_start_failures_total{kernelspec=\"python3\"} 0",
                               "callisto_kernel_start_failures_total{kernelspec=\"ir\"} 0",
                               "callisto_kernel_starts_total{kernelspec=\"python3\"} 0",
                               "callisto_pool_claims_total{kernelspec=\"ir\",result=\"miss\"} 0",
                               "callisto_kernel_deaths_total{cause=\"oom\"} 0",
                               "callisto_kernel_policy_resets_total{result=\"gave_way\"} 0",
                               "callisto_executions_total{api=\"v1\",status=\"error\"} 0",
                               "callisto_output_truncations_total{api=\"mcp\",kind=\"stream\"} 0"})
        CHECK(text.find(series) != std::string::npos);
    // Counting moves the same series on, not a second one.
    m.start_failures.with({"python3"}).inc();
    CHECK(r.render().find("callisto_kernel_start_failures_total{kernelspec=\"python3\"} 1") !=
          std::string::npos);
}
