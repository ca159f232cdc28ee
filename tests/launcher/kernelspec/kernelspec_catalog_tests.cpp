#include <doctest/doctest.h>

#include <mutex>
#include <string>
#include <vector>

#include "launcher/kernelspec/kernelspec_catalog.hpp"
#include "tests/launcher/test_support.hpp"

using callisto::log_level;
using callisto::logger;
using callisto::launcher::kernelspec_catalog;
using callisto::launcher::test::env_override;
using callisto::launcher::test::temp_dir;
using callisto::launcher::test::write_file;
using paths = std::vector<std::filesystem::path>;

namespace {

void write_spec(const std::filesystem::path& dir, const std::string& display_name) {
    write_file(dir / "kernel.json",
               R"({"argv": ["k", "{connection_file}"], "display_name": ")" + display_name + "\"}");
}

struct captured_log {
    std::vector<std::string> lines;
    logger make() {
        return logger([this](log_level, std::string_view, const callisto::log_fields&,
                             std::string_view text) { lines.emplace_back(text); },
                      log_level::debug);
    }
    bool contains(const std::string& needle) const {
        for (const auto& line : lines)
            if (line.find(needle) != std::string::npos) return true;
        return false;
    }
};

}  // namespace

TEST_CASE("default_search_path is JUPYTER_PATH, then the user data dir, then the system dirs") {
    env_override jupyter_path("JUPYTER_PATH", "/a::/b/");
    env_override data_dir("JUPYTER_DATA_DIR", std::nullopt);
    env_override xdg("XDG_DATA_HOME", std::nullopt);
    env_override home("HOME", "/home/u");
    CHECK(kernelspec_catalog::default_search_path() ==
          paths{"/a/kernels", "/b/kernels", "/home/u/.local/share/jupyter/kernels",
                "/usr/local/share/jupyter/kernels", "/usr/share/jupyter/kernels"});
}

TEST_CASE("default_search_path respects JUPYTER_DATA_DIR and works without JUPYTER_PATH") {
    env_override jupyter_path("JUPYTER_PATH", std::nullopt);
    env_override data_dir("JUPYTER_DATA_DIR", "/data/jupyter");
    env_override home("HOME", "/home/u");
    CHECK(kernelspec_catalog::default_search_path() == paths{"/data/jupyter/kernels",
                                                             "/usr/local/share/jupyter/kernels",
                                                             "/usr/share/jupyter/kernels"});
}

TEST_CASE("catalog lists specs by name, skipping dirs without kernel.json and broken specs") {
    temp_dir tmp;
    const auto kernels = tmp.path() / "kernels";
    write_spec(kernels / "zeta", "Zeta");
    write_spec(kernels / "Alpha", "Alpha");
    std::filesystem::create_directories(kernels / "no-spec-here");
    write_file(kernels / "broken" / "kernel.json", R"({"argv": []})");
    write_file(kernels / "not-a-dir", "x");

    captured_log log;
    kernelspec_catalog catalog({kernels, tmp.path() / "does-not-exist"}, log.make());

    REQUIRE(catalog.all().size() == 2);
    CHECK(catalog.all()[0].name == "alpha");
    CHECK(catalog.all()[1].name == "zeta");
    CHECK(catalog.find("alpha")->display_name == "Alpha");
    CHECK_FALSE(catalog.find("broken"));
    CHECK_FALSE(catalog.find("no-spec-here"));
    CHECK(log.contains("broken"));
    CHECK(log.contains("argv"));
    CHECK(catalog.default_name() == "alpha");  // no python3: the first by name
}

TEST_CASE("an earlier directory wins a name clash") {
    temp_dir tmp;
    write_spec(tmp.path() / "first" / "kernels" / "echo", "First");
    write_spec(tmp.path() / "second" / "kernels" / "ECHO", "Second");
    write_spec(tmp.path() / "second" / "kernels" / "only-second", "Only");
    env_override jupyter_path(
        "JUPYTER_PATH", (tmp.path() / "first").string() + ":" + (tmp.path() / "second").string());

    kernelspec_catalog catalog(kernelspec_catalog::default_search_path());
    REQUIRE(catalog.find("echo"));
    CHECK(catalog.find("echo")->display_name == "First");
    CHECK(catalog.find("only-second")->display_name == "Only");
}

TEST_CASE("a JUPYTER_PATH spec named python3 hides the system one and becomes the default") {
    temp_dir tmp;
    write_spec(tmp.path() / "kernels" / "python3", "Mine");
    write_spec(tmp.path() / "kernels" / "aaa", "First by name");
    env_override jupyter_path("JUPYTER_PATH", tmp.path().string());

    kernelspec_catalog catalog(kernelspec_catalog::default_search_path());
    REQUIRE(catalog.find("python3"));
    CHECK(catalog.find("python3")->display_name == "Mine");
    CHECK(catalog.default_name() == "python3");
}

TEST_CASE("refresh picks up specs added after construction") {
    temp_dir tmp;
    kernelspec_catalog catalog({tmp.path()});
    CHECK(catalog.all().empty());
    CHECK(catalog.default_name().empty());
    write_spec(tmp.path() / "late", "Late");
    catalog.refresh();
    CHECK(catalog.find("late"));
}

TEST_CASE("a kernelspec the check refuses is not offered; its reason is logged and kept") {
    temp_dir tmp;
    write_spec(tmp.path() / "first" / "venv", "Broken venv");
    write_spec(tmp.path() / "first" / "good", "Good");
    write_spec(tmp.path() / "second" / "venv", "Another of the name");
    captured_log log;
    kernelspec_catalog catalog({tmp.path() / "first", tmp.path() / "second"}, log.make(),
                               [](const callisto::launcher::kernelspec& spec) -> std::string {
                                   return spec.display_name == "Broken venv" ? "it is broken" : "";
                               });
    REQUIRE(catalog.all().size() == 1);
    CHECK(catalog.all()[0].name == "good");
    // Refused, it still hides the later kernelspec of its name.
    CHECK_FALSE(catalog.find("venv"));
    CHECK(catalog.refusal("venv") == "it is broken");
    CHECK_FALSE(catalog.refusal("good"));
    CHECK_FALSE(catalog.refusal("no-such"));
    CHECK(catalog.refused().size() == 1);
    CHECK(catalog.default_name() == "good");
    CHECK(log.contains("kernelspec venv (" + (tmp.path() / "first" / "venv").string() +
                       ") is not offered: it is broken"));
    CHECK(log.contains("found 1 kernelspec(s), refused 1"));

    // Fixed on disk: the next refresh offers it.
    write_spec(tmp.path() / "first" / "venv", "Fixed");
    catalog.refresh();
    CHECK(catalog.find("venv")->display_name == "Fixed");
    CHECK_FALSE(catalog.refusal("venv"));
}
