#pragma once
// What an E2B templateID means here: a template the admin declared (--e2b-template: a
// kernelspec with ready kernels of its own in the warm pool and a default lifetime), else a
// kernelspec's name, else one of the SDKs' default names (the default kernelspec); anything
// else is refused. Pure: the declarations are parsed and names resolved without kernels, so
// every form is unit-tested.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace callisto::gateway::e2b {

// One declared template, "NAME:KERNELSPEC[:pool=N][:timeout=SECS]".
struct sandbox_template {
    std::string name;        // the templateID a client sends
    std::string kernelspec;  // what its sandboxes run
    // Ready kernels of that kernelspec it adds to the warm pool (the pool is the
    // kernelspec's: any start of that kernelspec may take them).
    std::size_t pool = 0;
    // A create that sends no timeout lives this long; none: the facade's default (300 s).
    std::optional<std::chrono::seconds> timeout;

    bool operator==(const sandbox_template&) const = default;
};

// Bounds of a declaration: the pool as --pool's, the timeout E2B's longest (24 h).
inline constexpr std::size_t max_template_pool = 64;
inline constexpr std::chrono::seconds max_template_timeout{24 * 3600};

// The declaration, or nullopt with what is wrong with it in `error`.
std::optional<sandbox_template> parse_sandbox_template(std::string_view text, std::string& error);
// The declaration as parse_sandbox_template reads it back (--print-config).
std::string format_sandbox_template(const sandbox_template& t);

// What a templateID resolved to.
struct template_choice {
    std::string name;    // as the client named it (the SDK's default name for none)
    std::string kernel;  // the kernelspec it runs
    std::optional<std::chrono::seconds> timeout;  // the template's default lifetime, if any
};

class sandbox_templates {
public:
    // `kernelspecs`: every kernelspec's name; `sdk_defaults`: the names that mean the default
    // kernelspec (the first is what a create without templateID is called).
    sandbox_templates(std::vector<sandbox_template> declared, std::vector<std::string> kernelspecs,
                      std::vector<std::string> sdk_defaults);

    // A declared template, else a kernelspec, else an SDK default (running `default_kernel`);
    // nullopt, with E2B's sentence for the 400 in `why`, for any other name.
    std::optional<template_choice> resolve(const std::string& template_id,
                                           const std::string& default_kernel,
                                           std::string& why) const;

    const std::vector<sandbox_template>& declared() const { return declared_; }

private:
    std::vector<sandbox_template> declared_;
    std::vector<std::string> kernelspecs_;
    std::vector<std::string> sdk_defaults_;
};

}  // namespace callisto::gateway::e2b
