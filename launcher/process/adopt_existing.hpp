#pragma once
// The tag of the constructors that take over what an earlier gateway made and left running
// (a kernel's runtime directory, workdir, cgroup), instead of creating it: a kernel adopted
// after a gateway restart (--state-dir). The object then owns it as if it had made it, and
// removes it in the end.

namespace callisto::launcher {

struct adopt_existing_t {
    explicit adopt_existing_t() = default;
};
inline constexpr adopt_existing_t adopt_existing{};

}  // namespace callisto::launcher
