#pragma once
// Who a request comes from. Kernels belong to the user who created them; a user sees and
// touches only their own, an admin sees all and may attach to any for debugging.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace callisto::gateway {

struct user {
    std::string name;
    bool admin = false;
    std::size_t max_kernels = 0;  // 0: no per-user limit
    // What this user's contexts may ask the egress proxy for, within the server's
    // --egress-allow (canonical rules); nullopt: the server's ceiling alone.
    std::optional<std::vector<std::string>> egress_allow = std::nullopt;

    bool may_use(const std::string& owner) const { return admin || owner == name; }
};

}  // namespace callisto::gateway
