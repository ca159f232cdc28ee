#pragma once
// Who a request comes from. Kernels belong to the user who created them; a user sees and
// touches only their own, an admin sees all and may attach to any for debugging.

#include <cstddef>
#include <string>

namespace callisto::gateway {

struct user {
    std::string name;
    bool admin = false;
    std::size_t max_kernels = 0;  // 0: no per-user limit

    bool may_use(const std::string& owner) const { return admin || owner == name; }
};

}  // namespace callisto::gateway
