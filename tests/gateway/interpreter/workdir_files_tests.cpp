// Files in a context's workdir: what is allowed, and every way out that is refused.

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <filesystem>
#include <fstream>

#include "gateway/interpreter/workdir_changes.hpp"
#include "gateway/interpreter/workdir_files.hpp"
#include "tests/gateway/route_table_matching.hpp"
#include "tests/support/workdir_beside_a_secret.hpp"

using namespace callisto::gateway;
using namespace callisto::gateway::interpreter;
namespace fs = std::filesystem;

namespace {

using temp_workdir = callisto::test::workdir_beside_a_secret;

}  // namespace

TEST_CASE("check_relative_path accepts ordinary names and refuses every odd form") {
    for (const char* ok : {"a.csv", "data/in.csv", "x y/ü.txt", ".hidden", "a..b"}) {
        INFO(ok);
        CHECK_FALSE(check_relative_path(ok));
    }
    for (std::string bad :
         {std::string(""), std::string("/etc/passwd"), std::string(".."), std::string("a/../b"),
          std::string("./a"), std::string("a//b"), std::string("a/"), std::string("a\\b"),
          std::string("a\nb"), std::string("a\x7f"), std::string("a\0b", 3), std::string(256, 'n'),
          std::string(1025, 'a')}) {
        INFO(bad);
        CHECK(check_relative_path(bad));
    }
}

TEST_CASE("workdir files: write, read, list and remove, creating parents") {
    temp_workdir t;
    workdir_files files(t.root);
    CHECK_FALSE(files.write("data/in.csv", "a,b\n1,2\n"));
    CHECK_FALSE(files.write("data/in.csv", "a,b\n3,4\n"));  // replaced
    std::string out;
    REQUIRE_FALSE(files.read("data/in.csv", out, 1 << 20));
    CHECK(out == "a,b\n3,4\n");
    nlohmann::json list;
    bool truncated = true;
    REQUIRE_FALSE(files.list(list, 100, true, truncated));
    CHECK_FALSE(truncated);
    REQUIRE(list.size() == 2);
    CHECK(list[0]["path"] == "data");
    CHECK(list[0]["type"] == "directory");
    CHECK(list[1]["path"] == "data/in.csv");
    CHECK(list[1]["size"] == 8);
    CHECK_FALSE(files.remove("data/in.csv"));
    CHECK_FALSE(files.remove("data"));
    CHECK(files.read("data/in.csv", out, 100)->http_status == 404);
}

TEST_CASE("workdir files: symlinks are never followed, in the middle or at the end") {
    temp_workdir t;
    fs::create_directory_symlink(t.outside, t.root / "link");
    fs::create_symlink(t.outside / "secret.txt", t.root / "secret.txt");
    workdir_files files(t.root);
    std::string out;
    auto e = files.read("link/secret.txt", out, 100);
    REQUIRE(e);
    CHECK(e->http_status == 400);
    CHECK(e->message.find("symbolic link") != std::string::npos);
    CHECK(files.read("secret.txt", out, 100)->http_status == 400);
    CHECK(files.write("link/planted.txt", "x"));
    CHECK_FALSE(fs::exists(t.outside / "planted.txt"));
    // Writing over a symlink replaces the link; the target is untouched.
    CHECK_FALSE(files.write("secret.txt", "mine"));
    std::ifstream in(t.outside / "secret.txt");
    std::string secret;
    in >> secret;
    CHECK(secret == "secret");
    CHECK_FALSE(fs::is_symlink(t.root / "secret.txt"));
    CHECK(files.remove("link/secret.txt"));
    CHECK(fs::exists(t.outside / "secret.txt"));
    nlohmann::json list;
    bool truncated = false;
    REQUIRE_FALSE(files.list(list, 100, true, truncated));
    CHECK(list.size() == 2);  // "link" listed as a symlink, not walked
}

TEST_CASE("workdir files: traversal, directories, size limits and a missing workdir") {
    temp_workdir t;
    workdir_files files(t.root);
    std::string out;
    CHECK(files.read("../outside/secret.txt", out, 100)->http_status == 400);
    CHECK(files.write("/etc/x", "x")->http_status == 400);
    CHECK_FALSE(files.write("big.bin", std::string(1000, 'x')));
    CHECK(files.read("big.bin", out, 999)->http_status == 413);
    CHECK_FALSE(files.write("d/f", "x"));
    CHECK(files.read("d", out, 100)->http_status == 409);
    CHECK(files.write("d", "x")->http_status == 409);
    CHECK(files.write("d/f/g", "x")->http_status == 409);  // a file used as a directory
    CHECK(files.remove("d")->http_status == 409);          // not empty
    CHECK(files.remove("nothing")->http_status == 404);
    workdir_files gone(t.base.path() / "missing");
    nlohmann::json list;
    bool truncated = false;
    CHECK(gone.list(list, 10, false, truncated)->http_status == 503);
}

TEST_CASE("workdir files: a download opens the file with every check a read makes") {
    temp_workdir t;
    fs::create_directory_symlink(t.outside, t.root / "link");
    fs::create_symlink(t.outside / "secret.txt", t.root / "secret.txt");
    REQUIRE(::mkfifo((t.root / "fifo").c_str(), 0600) == 0);
    workdir_files files(t.root);
    REQUIRE_FALSE(files.write("d/data.bin", std::string(1000, 'x')));
    callisto::unique_fd fd;
    std::uint64_t size = 0;
    REQUIRE_FALSE(files.open_for_read("d/data.bin", fd, size, 1000));
    CHECK(fd.get() >= 0);
    CHECK(size == 1000);
    auto refused = [&](std::string_view path, std::size_t max) {
        callisto::unique_fd none;
        auto e = files.open_for_read(path, none, size, max);
        CHECK(none.get() < 0);
        return e ? e->http_status : 0;
    };
    CHECK(refused("d/data.bin", 999) == 413);
    CHECK(refused("link/secret.txt", 100) == 400);
    CHECK(refused("secret.txt", 100) == 400);
    CHECK(refused("../outside/secret.txt", 100) == 400);
    CHECK(refused("d", 100) == 409);
    CHECK(refused("fifo", 100) == 409);  // not a regular file, and the open did not block
    CHECK(refused("missing", 100) == 404);
    CHECK(refused("", 100) == 400);
}

namespace {
bool has_temp_files(const fs::path& root) {
    for (auto& e : fs::recursive_directory_iterator(root))
        if (e.path().filename().string().starts_with(".callisto-upload-")) return true;
    return false;
}
}  // namespace

TEST_CASE("workdir files: write_all writes every file, or none when one is refused") {
    temp_workdir t;
    workdir_files files(t.root);
    REQUIRE_FALSE(files.write_all({{"a.csv", "1"}, {"sub/b.csv", "2"}}));
    std::string out;
    REQUIRE_FALSE(files.read("sub/b.csv", out, 100));
    CHECK(out == "2");

    REQUIRE_FALSE(files.write("keep.txt", "old"));
    fs::create_directories(t.root / "adir");
    fs::create_directory_symlink(t.outside, t.root / "link");
    // The second file would replace a directory, go through a link, or is a bad path: the
    // first, already written under a temporary name, is not put in place either.
    for (std::string_view second : {"adir", "link/x", "../x", "keep.txt/y"}) {
        INFO(second);
        auto e = files.write_all({{"keep.txt", "new"}, {second, "2"}});
        REQUIRE(e);
        CHECK(e->http_status >= 400);
        REQUIRE_FALSE(files.read("keep.txt", out, 100));
        CHECK(out == "old");
        CHECK_FALSE(has_temp_files(t.root));
    }
    CHECK_FALSE(fs::exists(t.outside / "x"));
}

TEST_CASE("workdir files: a listing stops at its bound and says so") {
    temp_workdir t;
    workdir_files files(t.root);
    for (int i = 0; i < 5; ++i) REQUIRE_FALSE(files.write("f" + std::to_string(i), "x"));
    nlohmann::json list;
    bool truncated = false;
    REQUIRE_FALSE(files.list(list, 3, true, truncated));
    CHECK(list.size() == 3);
    CHECK(truncated);
}

TEST_CASE("router maps the /v1 file routes, multi-segment paths included") {
    const std::string cid = "0f1e2d3c-4b5a-4968-8776-655443322110";
    const std::string base = "/v1/contexts/" + cid + "/files";
    CHECK(match_route("GET", base, false).name() == "files_list");
    auto put = match_route("PUT", base + "/data/in%20put.csv", false);
    CHECK(put.name() == "file_put");
    CHECK(put.param("path") == "data/in put.csv");
    CHECK(put.param("context_id") == cid);
    CHECK(match_route("GET", base + "/a", false).name() == "file_get");
    CHECK(match_route("DELETE", base + "/a", false).name() == "file_delete");
    CHECK(match_route("POST", base + "/a", false).allow == "GET, PUT, DELETE");
    CHECK(match_route("POST", base, false).name() == "files_upload");
    CHECK(match_route("PUT", base, false).allow == "GET, POST");
    for (const std::string& bad : std::vector<std::string>{
             base + "/../x", base + "/a/%2e%2e/b", base + "/a%2fb", base + "/a%00", base + "//a"}) {
        INFO(bad);
        CHECK(match_route("GET", bad, false).name() == "bad_v1_path");
    }
    CHECK(match_route("GET", "/api/kernels/..", false).name() == "not_found");
}

TEST_CASE("workdir files: the kernel's dot-directories are listed only when asked for") {
    temp_workdir t;
    workdir_files files(t.root);
    REQUIRE_FALSE(files.write("sales.csv", "a\n"));
    REQUIRE_FALSE(files.write(".cache/matplotlib/fontlist.json", "{}"));
    REQUIRE_FALSE(files.write("out/.hidden", "x"));
    nlohmann::json list;
    bool truncated = false;
    REQUIRE_FALSE(files.list(list, 100, false, truncated));
    std::vector<std::string> paths;
    for (const auto& e : list) paths.push_back(e["path"]);
    CHECK(paths == std::vector<std::string>{"out", "sales.csv"});
    REQUIRE_FALSE(files.list(list, 100, true, truncated));
    CHECK(list.size() == 6);  // .cache, .cache/matplotlib, its file, out, out/.hidden, sales.csv
}

// ---- what an execution wrote (the audit log's files_written) --------------------------------

TEST_CASE("changed_files names new and changed files, not unchanged or the kernel's own") {
    temp_workdir w;
    workdir_files files(w.root);
    std::ofstream(w.root / "kept.csv") << "a,b\n";
    std::ofstream(w.root / "edited.txt") << "old";
    fs::create_directories(w.root / ".ipython/profile_default");
    const auto before = capture_workdir(files, 100);
    CHECK(before.complete);
    CHECK(before.files.size() == 2);

    std::ofstream(w.root / "edited.txt") << "new and longer";
    fs::create_directories(w.root / "out/deep");
    std::ofstream(w.root / "out/deep/chart.png") << "png";
    std::ofstream(w.root / ".secret") << "dot-files the code writes are named";
    std::ofstream(w.root / ".ipython/profile_default/history.sqlite") << "the kernel's own";
    fs::create_symlink("/etc/passwd", w.root / "link");  // not a regular file: not followed
    const auto after = capture_workdir(files, 100);
    CHECK(changed_files(before, after, 10) ==
          std::vector<std::string>{".secret", "edited.txt", "out/deep/chart.png"});
}

TEST_CASE("changed_files names at most max_paths and counts the rest") {
    temp_workdir w;
    workdir_files files(w.root);
    const auto before = capture_workdir(files, 100);
    for (int i = 0; i < 5; ++i) std::ofstream(w.root / ("f" + std::to_string(i))) << i;
    auto changed = changed_files(before, capture_workdir(files, 100), 2);
    CHECK(changed == std::vector<std::string>{"f0", "f1", "(3 more)"});
}

TEST_CASE("changed_files says when the workdir held more than was compared") {
    temp_workdir w;
    workdir_files files(w.root);
    for (int i = 0; i < 5; ++i) std::ofstream(w.root / ("f" + std::to_string(i))) << i;
    const auto before = capture_workdir(files, 3);
    CHECK_FALSE(before.complete);
    auto changed = changed_files(before, capture_workdir(files, 3), 10);
    CHECK(changed.back() == "(the workdir holds more files than were compared)");
    workdir_files missing(w.root / "gone");
    CHECK_FALSE(capture_workdir(missing, 10).complete);
}
