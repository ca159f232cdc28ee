#include "gateway/kernels/lifecycle/kernel_policy.hpp"

namespace callisto::gateway::kernels {

std::optional<kernel_policy> parse_kernel_policy(std::string_view text) {
    if (text == "reuse") return kernel_policy::reuse;
    if (text == "fresh") return kernel_policy::fresh;
    return std::nullopt;
}

std::string_view to_string(kernel_policy policy) {
    return policy == kernel_policy::fresh ? "fresh" : "reuse";
}

bool may_reuse(std::size_t uses, std::chrono::system_clock::time_point started,
               std::chrono::system_clock::time_point now, const recycling_limits& limits) {
    if (limits.max_uses > 0 && uses >= limits.max_uses) return false;
    if (limits.max_lifetime.count() > 0 && now - started >= limits.max_lifetime) return false;
    return true;
}

}  // namespace callisto::gateway::kernels
