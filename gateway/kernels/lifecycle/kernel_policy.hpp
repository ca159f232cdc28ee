#pragma once
// What a context or a one-shot execution may do with kernels, and when a kernel has served
// enough. Pure, so the rules are unit-tested without kernels.
//
//   reuse  a context keeps its kernel and state across executions until it is culled or
//          deleted; then, within the recycling limits, the kernel is renewed (a new process
//          in a new sandbox) and kept for its owner's next reuse context or one-shot
//          execution, which then starts without waiting for the kernel to boot. A one-shot
//          execution runs on such a kept kernel when there is one.
//   fresh  each new context, or each one-shot execution, gets a kernel no one used before
//          (from the warm pool or newly started); it is destroyed afterwards.
//
// Kernels are only ever kept for the user who used them: reuse never crosses owners.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

namespace callisto::gateway::kernels {

enum class kernel_policy { reuse, fresh };

std::optional<kernel_policy> parse_kernel_policy(std::string_view text);
std::string_view to_string(kernel_policy policy);

struct recycling_limits {
    std::size_t max_uses = 0;              // contexts or one-shot runs one kernel serves; 0: any
    std::chrono::seconds max_lifetime{0};  // a kernel older than this is not reused; 0: any age
};

// What the reuse policy may do with kernels a user finished with.
struct kernel_reuse {
    recycling_limits limits{20, std::chrono::seconds(3600)};
    std::size_t kept_per_user = 2;  // reset kernels waiting for their owner; 0 keeps none
};

// Whether a kernel that has served `uses` contexts or one-shot runs, started at `started`,
// may serve one more.
bool may_reuse(std::size_t uses, std::chrono::system_clock::time_point started,
               std::chrono::system_clock::time_point now, const recycling_limits& limits);

}  // namespace callisto::gateway::kernels
