// E2B templates: the admin's declarations (--e2b-template) read and shown, and what a
// templateID resolves to: a declared template, else a kernelspec, else an SDK default.

#include <doctest/doctest.h>

#include "gateway/e2b/sandbox_templates.hpp"

using namespace callisto::gateway::e2b;
using namespace std::chrono_literals;

TEST_CASE("a template declaration: a name and a kernelspec, a pool and a timeout if given") {
    std::string error;
    auto plain = parse_sandbox_template("data-science:python3", error);
    REQUIRE(plain);
    CHECK(plain->name == "data-science");
    CHECK(plain->kernelspec == "python3");
    CHECK(plain->pool == 0);
    CHECK_FALSE(plain->timeout);

    auto full = parse_sandbox_template("ds_v2.1:ir:pool=3:timeout=900", error);
    REQUIRE(full);
    CHECK(full->name == "ds_v2.1");
    CHECK(full->kernelspec == "ir");
    CHECK(full->pool == 3);
    CHECK(full->timeout == 900s);

    // Either order; the bounds themselves taken.
    auto reversed = parse_sandbox_template("t:python3:timeout=86400:pool=64", error);
    REQUIRE(reversed);
    CHECK(reversed->pool == 64);
    CHECK(reversed->timeout == 86400s);
    auto none = parse_sandbox_template("t:python3:pool=0:timeout=1", error);
    REQUIRE(none);
    CHECK(none->pool == 0);
    CHECK(none->timeout == 1s);
}

TEST_CASE("a template declaration shows as it is read back") {
    for (const char* text :
         {"a:python3", "a:python3:pool=2", "a:python3:timeout=60", "a:ir:pool=1:timeout=600"}) {
        std::string error;
        auto t = parse_sandbox_template(text, error);
        REQUIRE_MESSAGE(t, text);
        CHECK(format_sandbox_template(*t) == text);
        CHECK(parse_sandbox_template(format_sandbox_template(*t), error) == t);
    }
}

TEST_CASE("every bad template declaration is refused, saying what is wrong") {
    const std::pair<const char*, const char*> bad[] = {
        {"", "name and its kernelspec"},
        {"only-a-name", "name and its kernelspec"},
        {":python3", "a name of 1-64"},
        {"bad name:python3", "not 'bad name'"},
        {"a/b:python3", "not 'a/b'"},
        {"a:", "a kernelspec's name"},
        {"a:py thon", "a kernelspec's name"},
        {"a:python3:", "neither pool=N nor timeout=SECS"},
        {"a:python3:size=2", "'size=2' is neither"},
        {"a:python3:pool", "pool=N with N 0-64"},
        {"a:python3:pool=", "pool=N with N 0-64"},
        {"a:python3:pool=65", "pool=N with N 0-64"},
        {"a:python3:pool=-1", "pool=N with N 0-64"},
        {"a:python3:pool=2x", "pool=N with N 0-64"},
        {"a:python3:pool=1:pool=2", "pool given twice"},
        {"a:python3:timeout=0", "timeout=SECS with SECS 1-86400"},
        {"a:python3:timeout=86401", "timeout=SECS with SECS 1-86400"},
        {"a:python3:timeout=5m", "timeout=SECS with SECS 1-86400"},
        {"a:python3:timeout=60:timeout=60", "timeout given twice"},
    };
    for (const auto& [text, why] : bad) {
        std::string error;
        CAPTURE(text);
        CHECK_FALSE(parse_sandbox_template(text, error));
        CHECK(error.find("NAME:KERNELSPEC[:pool=N][:timeout=SECS]") == 0);
        CHECK_MESSAGE(error.find(why) != std::string::npos, error);
    }
    std::string error;
    CHECK_FALSE(parse_sandbox_template(std::string(65, 'n') + ":python3", error));
    CHECK(parse_sandbox_template(std::string(64, 'n') + ":python3", error));
}

namespace {

sandbox_templates declared() {
    return sandbox_templates({{"data", "ir", 2, 900s}, {"base", "python3-big", 0, std::nullopt}},
                             {"python3", "python3-big", "ir"}, {"code-interpreter-v1", "base"});
}

}  // namespace

TEST_CASE("a templateID resolves to a declared template, a kernelspec or an SDK default") {
    const auto templates = declared();
    std::string why;
    auto data = templates.resolve("data", "python3", why);
    REQUIRE(data);
    CHECK(data->name == "data");
    CHECK(data->kernel == "ir");
    CHECK(data->timeout == 900s);

    auto kernelspec = templates.resolve("ir", "python3", why);
    REQUIRE(kernelspec);
    CHECK(kernelspec->name == "ir");
    CHECK(kernelspec->kernel == "ir");
    CHECK_FALSE(kernelspec->timeout);

    auto sdk = templates.resolve("code-interpreter-v1", "python3", why);
    REQUIRE(sdk);
    CHECK(sdk->name == "code-interpreter-v1");
    CHECK(sdk->kernel == "python3");

    // None named: the code interpreter SDK's default, by its name.
    auto unnamed = templates.resolve("", "python3", why);
    REQUIRE(unnamed);
    CHECK(unnamed->name == "code-interpreter-v1");
    CHECK(unnamed->kernel == "python3");
}

TEST_CASE("a declared template wins over an SDK default and a kernelspec of its name") {
    std::string why;
    auto base = declared().resolve("base", "python3", why);
    REQUIRE(base);
    CHECK(base->kernel == "python3-big");

    const sandbox_templates shadowing({{"python3", "ir", 0, 60s}}, {"python3", "ir"},
                                      {"code-interpreter-v1", "base"});
    auto python = shadowing.resolve("python3", "python3", why);
    REQUIRE(python);
    CHECK(python->kernel == "ir");
    CHECK(python->timeout == 60s);
}

TEST_CASE("an unknown templateID is refused, naming what a template can be") {
    std::string why;
    CHECK_FALSE(declared().resolve("no-such-template", "python3", why));
    CHECK(why ==
          "template 'no-such-template' not found: a template here is one the server declares "
          "(data, base), a kernelspec's name (GET /api/kernelspecs), or code-interpreter-v1 or "
          "base for the default one");
    const sandbox_templates none({}, {"python3"}, {"code-interpreter-v1", "base"});
    CHECK_FALSE(none.resolve("Data", "python3", why));
    CHECK(why.find("declares (none)") != std::string::npos);
}
