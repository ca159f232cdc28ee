#include <doctest/doctest.h>

#include <unistd.h>
#include <set>
#include <string>

#include "launcher/kernelspec/kernel_command.hpp"
#include "tests/launcher/test_support.hpp"

using callisto::launcher::kernel_command;
using callisto::launcher::kernelspec;
using callisto::launcher::test::env_override;

namespace {

kernelspec sample_spec() {
    kernelspec spec;
    spec.name = "sample";
    spec.resource_dir = "/specs/sample";
    spec.argv = {"python3", "-f", "{connection_file}", "--res={resource_dir}/{resource_dir}"};
    spec.display_name = "Sample";
    spec.env = {{"SPEC_VAR", "{resource_dir}/lib:{connection_file}"}, {"OVERRIDDEN", "spec"}};
    return spec;
}

}  // namespace

TEST_CASE("kernel_command substitutes the connection file and resource dir in every argument") {
    const auto what = kernel_command(sample_spec(), "/run/k1/kernel.json", "/work/session");
    CHECK(what.argv == std::vector<std::string>{"python3", "-f", "/run/k1/kernel.json",
                                                "--res=/specs/sample//specs/sample"});
    CHECK(what.cwd == "/work/session");
}

TEST_CASE("kernel_command substitutes in the kernelspec's env, and the caller's extras win") {
    const auto what = kernel_command(sample_spec(), "/run/k1/kernel.json", "/",
                                     {{"OVERRIDDEN", "extra"}, {"EXTRA", "{connection_file}"}});
    CHECK(what.env.at("SPEC_VAR") == "/specs/sample/lib:/run/k1/kernel.json");
    CHECK(what.env.at("OVERRIDDEN") == "extra");
    CHECK(what.env.at("EXTRA") == "{connection_file}");  // extras are taken literally
}

TEST_CASE("kernel_command passes only a few safe host variables") {
    env_override secret("CALLISTO_TEST_SECRET_TOKEN", "hunter2");
    env_override path("PATH", "/opt/bin:/usr/bin");
    env_override lang("LANG", "C.UTF-8");
    env_override lc_all("LC_ALL", std::nullopt);
    env_override tz("TZ", "UTC");
    env_override home("HOME", "/home/kernel");
    env_override ld("LD_PRELOAD", "/evil.so");

    const auto what = kernel_command(sample_spec(), "/c.json", "/");
    CHECK_FALSE(what.env.contains("CALLISTO_TEST_SECRET_TOKEN"));
    CHECK_FALSE(what.env.contains("LD_PRELOAD"));
    CHECK_FALSE(what.env.contains("LC_ALL"));
    CHECK(what.env.at("PATH") == "/opt/bin:/usr/bin");
    CHECK(what.env.at("LANG") == "C.UTF-8");
    CHECK(what.env.at("TZ") == "UTC");
    CHECK(what.env.at("HOME") == "/home/kernel");
    CHECK(what.env.at("JPY_PARENT_PID") == std::to_string(::getpid()));

    std::set<std::string> names;
    for (const auto& [name, value] : what.env) names.insert(name);
    CHECK(names == std::set<std::string>{"PATH", "LANG", "TZ", "HOME", "JPY_PARENT_PID", "SPEC_VAR",
                                         "OVERRIDDEN"});
}

TEST_CASE("kernel_command gives a default PATH when the gateway has none") {
    env_override path("PATH", std::nullopt);
    const auto what = kernel_command(sample_spec(), "/c.json", "/");
    CHECK(what.env.at("PATH") == "/usr/local/bin:/usr/bin:/bin");
}
