#include "gateway/interpreter/snapshot_files.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>

#include <doctest/doctest.h>

#include "common/sha256.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace callisto::gateway::interpreter;

namespace {

struct temp_workdir : callisto::test::temp_dir {
    void write(const std::string& rel, const std::string& bytes) const {
        fs::create_directories((path() / rel).parent_path());
        std::ofstream(path() / rel, std::ios::binary) << bytes;
    }
};

const char* const report =
    R"({"carried": ["df", "f"], "not_carried": [{"name": "g", "type": "builtins.generator",)"
    R"( "reason": "a generator"}]})";

}  // namespace

TEST_CASE("snapshot files: the kernel's blob and report, and the workdir's regular files") {
    temp_workdir w;
    w.write(".callisto-snapshot.dill", "BLOB");
    w.write(".callisto-snapshot.json", report);
    w.write("data.csv", "a,b\n");
    w.write("sub/x.txt", "x");
    w.write(".ipython/profile_default/history.sqlite", "kernel's own");
    w.write(".cache/fontconfig/a", "kernel's own");
    w.write(".hidden", "the user's");
    fs::create_symlink("/etc/passwd", w.path() / "link");
    auto r = collect_snapshot(w.path(), {1 << 20, 100});
    REQUIRE(std::holds_alternative<snapshot_content>(r));
    const auto& c = std::get<snapshot_content>(r);
    CHECK(c.namespace_path == ".callisto-snapshot.dill");
    CHECK(c.carried == nlohmann::json({"df", "f"}));
    CHECK(c.files == std::vector<std::string>{".hidden", "data.csv", "sub/x.txt"});
    // The symlink is listed, not followed, not dropped silently.
    REQUIRE(c.not_carried.size() == 2);
    CHECK(c.not_carried[1]["name"] == "link");
    CHECK(c.not_carried[1]["type"] == "symlink");
    // The report is gone from the workdir; the blob stays for the store to copy, until
    // remove_snapshot_leftovers.
    CHECK_FALSE(fs::exists(w.path() / ".callisto-snapshot.json"));
    CHECK(fs::exists(w.path() / ".callisto-snapshot.dill"));
    remove_snapshot_leftovers(w.path());
    CHECK_FALSE(fs::exists(w.path() / ".callisto-snapshot.dill"));
}

TEST_CASE("snapshot files: no report, no blob, or past the quota: refused, leftovers removed") {
    temp_workdir w;
    w.write(".callisto-snapshot.dill", "BLOB");
    auto r = collect_snapshot(w.path(), {1 << 20, 100});
    REQUIRE(std::holds_alternative<snapshot_error>(r));
    CHECK(std::get<snapshot_error>(r).message.find("no report") != std::string::npos);
    CHECK_FALSE(fs::exists(w.path() / ".callisto-snapshot.dill"));

    w.write(".callisto-snapshot.json", report);
    r = collect_snapshot(w.path(), {1 << 20, 100});
    REQUIRE(std::holds_alternative<snapshot_error>(r));
    CHECK(std::get<snapshot_error>(r).http_status == 404);

    w.write(".callisto-snapshot.json", report);
    w.write(".callisto-snapshot.dill", std::string(100, 'b'));
    r = collect_snapshot(w.path(), {50, 100});
    REQUIRE(std::holds_alternative<snapshot_error>(r));
    CHECK(std::get<snapshot_error>(r).http_status == 507);

    w.write(".callisto-snapshot.json", report);
    w.write(".callisto-snapshot.dill", std::string(40, 'b'));
    w.write("big.bin", std::string(20, 'x'));
    r = collect_snapshot(w.path(), {50, 100});
    REQUIRE(std::holds_alternative<snapshot_error>(r));
    CHECK(std::get<snapshot_error>(r).http_status == 507);
    CHECK_FALSE(fs::exists(w.path() / ".callisto-snapshot.dill"));
}

TEST_CASE("snapshot files: a report that is not one is refused; strings are cut and kept UTF-8") {
    for (const char* bad :
         {"", "[]", "{}", R"({"carried": [1], "not_carried": []})",
          R"({"carried": [], "not_carried": ["x"]})", R"({"carried": "df", "not_carried": []})"}) {
        INFO(bad);
        CHECK_FALSE(parse_snapshot_report(bad));
    }
    auto r = parse_snapshot_report(R"({"carried": [], "not_carried": [{"name": ")" +
                                   std::string(1000, 'n') + R"(", "type": 3}]})");
    REQUIRE(r);
    CHECK(r->not_carried[0]["name"].get<std::string>().size() == 300);
    CHECK(r->not_carried[0]["type"] == "");
    CHECK(r->not_carried[0]["reason"] == "");
}

TEST_CASE("snapshot files: placed back into a workdir, with the blob for the kernel to load") {
    temp_workdir store;  // stands for a snapshot's directory in the store
    store.write("0", "BLOB");
    store.write("1", "a,b\n");
    store.write("2", "x");
    auto piece = [&](bool ns, const std::string& path, const std::string& name,
                     const std::string& bytes) {
        return stored_piece{ns, path, store.path() / name, bytes.size(),
                            callisto::sha256_hex(bytes)};
    };
    stored_snapshot s;
    s.pieces = {piece(true, "", "0", "BLOB"), piece(false, "data.csv", "1", "a,b\n"),
                piece(false, "sub/x.txt", "2", "x")};
    temp_workdir w;
    REQUIRE_FALSE(place_snapshot(w.path(), s));
    std::ifstream in(w.path() / "sub/x.txt");
    std::string x;
    in >> x;
    CHECK(x == "x");
    CHECK(fs::file_size(w.path() / ".callisto-snapshot.dill") == 4);
    // A path outside the workdir never gets there, even from a manifest that passed.
    auto escaping = s;
    escaping.pieces.push_back(piece(false, "../escape", "2", "x"));
    CHECK(place_snapshot(w.path(), escaping));
    CHECK_FALSE(fs::exists(w.path().parent_path() / "escape"));
}

TEST_CASE("snapshot files: a piece changed after it was checked is not placed, nor the rest") {
    temp_workdir store;
    store.write("0", "BLOB");
    store.write("1", "a,b\n");
    stored_snapshot s;
    s.pieces = {{true, "", store.path() / "0", 4, callisto::sha256_hex("BLOB")},
                {false, "data.csv", store.path() / "1", 4, callisto::sha256_hex("a,b\n")}};
    store.write("1", "a,c\n");  // same size, after load_for's check
    temp_workdir w;
    auto e = place_snapshot(w.path(), s);
    REQUIRE(e);
    CHECK(e->http_status == 422);
    CHECK(e->message.find("changed") != std::string::npos);
    CHECK_FALSE(fs::exists(w.path() / "data.csv"));
    CHECK_FALSE(fs::exists(w.path() / ".callisto-snapshot.dill"));
    store.write("1", "a,b\nmore");  // grown
    CHECK(place_snapshot(w.path(), s));
    CHECK(fs::is_empty(w.path()));
}
