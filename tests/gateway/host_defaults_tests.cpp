#include "gateway/host_defaults.hpp"

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "tests/support/temp_dir.hpp"

using namespace callisto::gateway;
namespace fs = std::filesystem;

namespace {

struct temp_tree : callisto::test::temp_dir {
    fs::path page(const fs::path& dir) const {
        fs::create_directories(path() / dir);
        std::ofstream(path() / dir / "index.html") << "<p>ui</p>";
        return path() / dir;
    }
};

}  // namespace

TEST_CASE(
    "the web UI is looked for beside the binary, then in its build tree's sources, then "
    "in the install prefix") {
    const auto candidates = web_root_candidates("/opt/callisto/bin", "/src/build", "/src/web",
                                                "/usr/local/share/callisto/web");
    CHECK(candidates == std::vector<fs::path>{"/opt/callisto/share/callisto/web",
                                              "/opt/callisto/bin/web",
                                              "/usr/local/share/callisto/web"});
    // A binary of the build tree also serves the sources' web/; the same path twice is one.
    CHECK(web_root_candidates("/src/build/gateway", "/src/build", "/src/web",
                              "/usr/local/share/callisto/web") ==
          std::vector<fs::path>{"/src/build/share/callisto/web", "/src/build/gateway/web",
                                "/src/web", "/usr/local/share/callisto/web"});
    CHECK(web_root_candidates("/usr/local/bin", "", "", "/usr/local/share/callisto/web") ==
          std::vector<fs::path>{"/usr/local/share/callisto/web", "/usr/local/bin/web"});
    // "/src/build2" is not inside "/src/build".
    CHECK(web_root_candidates("/src/build2/gateway", "/src/build", "/src/web", "").size() == 2);
    // Without a binary's directory (no /proc), only what was compiled in.
    CHECK(web_root_candidates("", "/src/build", "/src/web", "/usr/share/callisto/web") ==
          std::vector<fs::path>{"/usr/share/callisto/web"});
}

TEST_CASE("the first candidate with an index.html is the web root; none gives none") {
    temp_tree t;
    const std::vector<fs::path> candidates = {t.path() / "share/callisto/web", t.path() / "bin/web",
                                              t.path() / "src/web"};
    CHECK(first_web_root(candidates).empty());
    fs::create_directories(t.path() / "share/callisto/web");  // a directory without index.html
    CHECK(first_web_root(candidates).empty());
    const auto sources = t.page("src/web");
    CHECK(first_web_root(candidates) == sources);
    const auto beside = t.page("bin/web");
    CHECK(first_web_root(candidates) == beside);
    const auto installed = t.page("share/callisto/web");
    CHECK(first_web_root(candidates) == installed);
}

TEST_CASE("an explicit --web-root, or off, is kept as given") {
    server_config c;
    c.web_root = "/srv/ui";
    CHECK(with_web_root(c).web_root == "/srv/ui");
    c.web_root.clear();
    c.web_root_off = true;
    CHECK(with_web_root(c).web_root.empty());
}
