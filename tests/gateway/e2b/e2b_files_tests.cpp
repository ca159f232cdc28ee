// envd's files for the E2B facade (gateway/e2b/envd_files, envd_upload, filesystem_rpc):
// E2B's paths onto the sandbox's workdir and every way out refused (traversal, links), the
// filesystem.Filesystem methods with their EntryInfo and error codes, POST /files' bodies,
// and every bad form of each.

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gateway/e2b/envd_files.hpp"
#include "gateway/e2b/envd_upload.hpp"
#include "gateway/e2b/filesystem_rpc.hpp"
#include "tests/support/workdir_beside_a_secret.hpp"

using namespace callisto;
using namespace callisto::gateway;
using namespace callisto::gateway::e2b;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct temp_home : callisto::test::workdir_beside_a_secret {
    std::string slurp(const fs::path& p) const {
        std::ifstream in(p);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
};

std::optional<std::string> resolve(std::string_view path) {
    envd_error e;
    return resolve_envd_path(path, e);
}

connect_code refusal(std::string_view path) {
    envd_error e{connect_code::internal, 0, ""};
    auto r = resolve_envd_path(path, e);
    REQUIRE_MESSAGE(!r, std::string(path));
    return e.code;
}

json rpc(const filesystem_rpc& r, std::string_view method, const json& body, int& status) {
    auto res = r.call(method, "application/json", body.dump());
    status = static_cast<int>(res.result_int());
    return json::parse(res.body());
}

}  // namespace

TEST_CASE("E2B paths: absolute under /home/user or /work, or relative to it") {
    CHECK(resolve("/home/user") == "");
    CHECK(resolve("/home/user/") == "");
    CHECK(resolve("/home/user/a.txt") == "a.txt");
    CHECK(resolve("/home/user//d/./e/") == "d/e");
    CHECK(resolve("/work/d/e") == "d/e");
    CHECK(resolve("a.txt") == "a.txt");
    CHECK(resolve("d/../e") == "e");
    CHECK(resolve(".") == "");
    CHECK(resolve(".hidden/x") == ".hidden/x");
    CHECK(envd_path_of("") == "/home/user");
    CHECK(envd_path_of("d/e") == "/home/user/d/e");
}

TEST_CASE("E2B paths: elsewhere, climbing out and malformed ones are refused") {
    for (const char* out :
         {"/", "/etc/passwd", "/home", "/home/username", "/home/user2/x", "/workspace", "..",
          "../x", "/home/user/..", "/home/user/../user2", "a/../../x", "/work/../etc"}) {
        INFO(out);
        CHECK(refusal(out) == connect_code::permission_denied);
    }
    for (std::string bad : {std::string(""), std::string("a\nb"), std::string("a\\b"),
                            std::string("a\0b", 3), std::string("a\x7f"), std::string(256, 'n'),
                            std::string(5000, 'a'), "/home/user/" + std::string(1100, 'a')}) {
        INFO(bad.size());
        CHECK(refusal(bad) == connect_code::invalid_argument);
    }
}

TEST_CASE("Go's FileMode strings, as envd reports permissions") {
    CHECK(go_mode_string(S_IFREG | 0644) == "-rw-r--r--");
    CHECK(go_mode_string(S_IFDIR | 0755) == "drwxr-xr-x");
    CHECK(go_mode_string(S_IFLNK | 0777) == "Lrwxrwxrwx");
    CHECK(go_mode_string(S_IFREG | S_ISUID | 0755) == "urwxr-xr-x");
    CHECK(go_mode_string(S_IFDIR | S_ISVTX | 0777) == "dtrwxrwxrwx");
    CHECK(go_mode_string(S_IFIFO | 0600) == "prw-------");
}

TEST_CASE("RFC 3339 times as google.protobuf.Timestamp's JSON") {
    CHECK(rfc3339({0, 0}) == "1970-01-01T00:00:00Z");
    CHECK(rfc3339({1700000000, 5}) == "2023-11-14T22:13:20.000000005Z");
}

TEST_CASE("envd files: stat, list with depth, mkdir, move and remove in the workdir") {
    temp_home t;
    envd_files files(t.root);
    REQUIRE_FALSE(files.write("d/e/f.txt", "hello"));
    CHECK(t.slurp(t.root / "d/e/f.txt") == "hello");
    REQUIRE_FALSE(files.write(".hidden", "h"));

    envd_entry entry;
    REQUIRE_FALSE(files.stat("d/e/f.txt", entry));
    CHECK(entry.name == "f.txt");
    CHECK(entry.path == "/home/user/d/e/f.txt");
    CHECK(entry.type == envd_file_type::file);
    CHECK(entry.size == 5);
    CHECK(entry.permissions == "-rw-r--r--");
    CHECK(entry.owner == "user");  // the workdir's owner
    REQUIRE_FALSE(files.stat("", entry));
    CHECK(entry.path == "/home/user");
    CHECK(entry.type == envd_file_type::directory);
    auto missing = files.stat("nope", entry);
    REQUIRE(missing);
    CHECK(missing->code == connect_code::not_found);
    CHECK(missing->http_status == 404);

    std::vector<envd_entry> list;
    REQUIRE_FALSE(files.list("", 1, 100, list));
    REQUIRE(list.size() == 2);  // hidden entries too, as envd shows them
    CHECK(list[0].name == ".hidden");
    CHECK(list[1].path == "/home/user/d");
    CHECK(list[1].type == envd_file_type::directory);
    REQUIRE_FALSE(files.list("", 0, 100, list));  // 0: envd's default, 1
    CHECK(list.size() == 2);
    REQUIRE_FALSE(files.list("", 3, 100, list));
    REQUIRE(list.size() == 4);
    CHECK(list[2].path == "/home/user/d/e");
    CHECK(list[3].path == "/home/user/d/e/f.txt");
    auto too_many = files.list("", 3, 3, list);
    REQUIRE(too_many);
    CHECK(too_many->code == connect_code::failed_precondition);
    CHECK(list.empty());
    auto not_dir = files.list("d/e/f.txt", 1, 100, list);
    REQUIRE(not_dir);
    CHECK(not_dir->code == connect_code::invalid_argument);
    auto no_dir = files.list("nope", 1, 100, list);
    REQUIRE(no_dir);
    CHECK(no_dir->code == connect_code::not_found);

    CHECK_FALSE(files.make_dir("x/y/z"));
    CHECK(fs::is_directory(t.root / "x/y/z"));
    auto again = files.make_dir("x/y/z");
    REQUIRE(again);
    CHECK(again->code == connect_code::already_exists);
    auto home = files.make_dir("");
    REQUIRE(home);
    CHECK(home->code == connect_code::already_exists);
    auto over_file = files.make_dir("d/e/f.txt");
    REQUIRE(over_file);
    CHECK(over_file->code == connect_code::invalid_argument);

    REQUIRE_FALSE(files.move("d/e/f.txt", "moved/g.txt", entry));
    CHECK(entry.path == "/home/user/moved/g.txt");
    CHECK(t.slurp(t.root / "moved/g.txt") == "hello");
    CHECK_FALSE(fs::exists(t.root / "d/e/f.txt"));
    auto gone = files.move("d/e/f.txt", "h.txt", entry);
    REQUIRE(gone);
    CHECK(gone->code == connect_code::not_found);
    auto into_itself = files.move("x", "x/y/z/x", entry);
    REQUIRE(into_itself);
    CHECK(into_itself->code == connect_code::invalid_argument);
    auto home_moved = files.move("", "elsewhere", entry);
    REQUIRE(home_moved);
    CHECK(home_moved->code == connect_code::permission_denied);

    CHECK_FALSE(files.remove("x"));  // a whole tree
    CHECK_FALSE(fs::exists(t.root / "x"));
    CHECK_FALSE(files.remove("x"));            // gone already: no error, as envd's RemoveAll
    CHECK_FALSE(files.remove("no/such/dir"));  // nor a missing parent
    auto home_removed = files.remove("");
    REQUIRE(home_removed);
    CHECK(home_removed->code == connect_code::permission_denied);
    CHECK(fs::exists(t.root));
}

TEST_CASE("envd files: links the sandbox planted are reported, never followed out") {
    temp_home t;
    envd_files files(t.root);
    fs::create_directory_symlink(t.outside, t.root / "out");
    fs::create_symlink(t.outside / "secret.txt", t.root / "secret");

    envd_entry entry;
    REQUIRE_FALSE(files.stat("out", entry));
    CHECK(entry.type == envd_file_type::symlink);
    REQUIRE(entry.symlink_target);
    CHECK(*entry.symlink_target == t.outside.string());
    for (const char* through : {"out/secret.txt", "out/new.txt"}) {
        INFO(through);
        auto e = files.stat(through, entry);
        REQUIRE(e);
        CHECK(e->code == connect_code::permission_denied);
    }
    std::vector<envd_entry> list;
    auto listed = files.list("out", 1, 100, list);
    REQUIRE(listed);
    CHECK(listed->code == connect_code::permission_denied);
    unique_fd fd;
    std::uint64_t size = 0;
    CHECK(files.open_for_read("secret", fd, size, 1 << 20));
    CHECK(files.open_for_read("out/secret.txt", fd, size, 1 << 20));
    CHECK(files.write("out/new.txt", "x"));
    CHECK_FALSE(fs::exists(t.outside / "new.txt"));
    CHECK(files.make_dir("out/sub"));
    CHECK_FALSE(fs::exists(t.outside / "sub"));
    CHECK(files.move("secret", "out/taken", entry));
    CHECK(files.move("out/secret.txt", "mine.txt", entry));
    CHECK(fs::exists(t.outside / "secret.txt"));
    // Removing the link removes the link, not what it points at.
    CHECK_FALSE(files.remove("out"));
    CHECK_FALSE(fs::exists(fs::symlink_status(t.root / "out")));
    CHECK(fs::exists(t.outside / "secret.txt"));
    // A link inside a tree being removed goes, its target stays.
    fs::create_directories(t.root / "tree/sub");
    fs::create_directory_symlink(t.outside, t.root / "tree/sub/link");
    CHECK_FALSE(files.remove("tree"));
    CHECK_FALSE(fs::exists(t.root / "tree"));
    CHECK(t.slurp(t.outside / "secret.txt") == "secret");
}

TEST_CASE("filesystem RPC: each method's answer in proto3 JSON") {
    temp_home t;
    envd_files files(t.root);
    filesystem_rpc r(files, 100);
    REQUIRE_FALSE(files.write("a.txt", "abc"));
    int status = 0;
    auto stat = rpc(r, "Stat", {{"path", "/home/user/a.txt"}}, status);
    CHECK(status == 200);
    CHECK(stat["entry"]["name"] == "a.txt");
    CHECK(stat["entry"]["type"] == "FILE_TYPE_FILE");
    CHECK(stat["entry"]["path"] == "/home/user/a.txt");
    CHECK(stat["entry"]["size"] == "3");
    CHECK(stat["entry"]["mode"] == 0644);
    CHECK(stat["entry"]["permissions"] == "-rw-r--r--");
    CHECK(stat["entry"]["modifiedTime"].get<std::string>().back() == 'Z');
    CHECK_FALSE(stat["entry"].contains("symlinkTarget"));

    auto made = rpc(r, "MakeDir", {{"path", "d/e"}}, status);
    CHECK(status == 200);
    CHECK(made["entry"]["type"] == "FILE_TYPE_DIRECTORY");
    auto exists = rpc(r, "MakeDir", {{"path", "/home/user/d/e"}}, status);
    CHECK(status == 409);
    CHECK(exists["code"] == "already_exists");

    auto list = rpc(r, "ListDir", {{"path", "/home/user"}, {"depth", 2}}, status);
    CHECK(status == 200);
    REQUIRE(list["entries"].size() == 3);
    CHECK(list["entries"][1]["path"] == "/home/user/d");
    auto by_string = rpc(r, "ListDir", {{"path", "."}, {"depth", "1"}}, status);
    CHECK(status == 200);
    CHECK(by_string["entries"].size() == 2);

    auto moved = rpc(r, "Move", {{"source", "a.txt"}, {"destination", "/work/d/b.txt"}}, status);
    CHECK(status == 200);
    CHECK(moved["entry"]["path"] == "/home/user/d/b.txt");
    auto removed = rpc(r, "Remove", {{"path", "d"}}, status);
    CHECK(status == 200);
    CHECK(removed == json::object());
    auto missing = rpc(r, "Stat", {{"path", "d"}}, status);
    CHECK(status == 404);
    CHECK(missing["code"] == "not_found");
}

TEST_CASE("filesystem RPC refuses bad requests with Connect's codes") {
    temp_home t;
    envd_files files(t.root);
    filesystem_rpc r(files, 100);
    struct bad_call {
        const char* method;
        std::string body;
        const char* code;
        int status;
    };
    for (const auto& c : std::vector<bad_call>{
             {"Stat", "{", "invalid_argument", 400},
             {"Stat", "[]", "invalid_argument", 400},
             {"Stat", "\"path\"", "invalid_argument", 400},
             {"Stat", "{}", "invalid_argument", 400},  // no path
             {"Stat", "", "invalid_argument", 400},
             {"Stat", R"({"path": 3})", "invalid_argument", 400},
             {"Stat", R"({"path": "/etc/passwd"})", "permission_denied", 403},
             {"Stat", R"({"path": "../outside/secret.txt"})", "permission_denied", 403},
             {"Remove", R"({"path": "/"})", "permission_denied", 403},
             {"Remove", R"({"path": "/home/user"})", "permission_denied", 403},
             {"ListDir", R"({"path": "/home/user", "depth": -1})", "invalid_argument", 400},
             {"ListDir", R"({"path": "/home/user", "depth": "x"})", "invalid_argument", 400},
             {"ListDir", R"({"path": "/home/user", "depth": 4294967296})", "invalid_argument", 400},
             {"ListDir", R"({"path": "/home/user", "depth": 1.5})", "invalid_argument", 400},
             {"Move", R"({"source": "a"})", "invalid_argument", 400},
             {"Move", R"({"source": "a", "destination": "/tmp/a"})", "permission_denied", 403},
             {"Move", R"({"source": "nope", "destination": "b"})", "not_found", 404},
             {"WatchDir", R"({"path": "."})", "unimplemented", 501},
             {"Nope", "{}", "unimplemented", 501},
         }) {
        INFO(c.method << " " << c.body);
        auto res = r.call(c.method, "application/json", c.body);
        CHECK(static_cast<int>(res.result_int()) == c.status);
        auto body = json::parse(res.body(), nullptr, false);
        REQUIRE(body.is_object());
        CHECK(body["code"] == c.code);
        CHECK(body["message"].is_string());
    }
    // Connect's proto codec is not spoken here: 415, as the protocol says.
    for (const char* type : {"application/proto", "text/plain", ""}) {
        INFO(type);
        auto res = r.call("Stat", type, R"({"path": "."})");
        CHECK(res.result_int() == 415);
    }
    CHECK(r.call("Stat", "application/json; charset=utf-8", R"({"path": "."})").result_int() ==
          200);
}

TEST_CASE("POST /files bodies: raw bytes or a form of files") {
    envd_error e;
    std::string body("a\0b\xff", 4);
    auto raw = parse_envd_upload(body, "application/octet-stream", "", "/home/user/x.bin", e);
    REQUIRE(raw);
    REQUIRE(raw->size() == 1);
    CHECK((*raw)[0].path == "x.bin");
    CHECK((*raw)[0].content == body);  // binary safe

    const std::string form =
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/home/user/a.txt\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\nAAA\r\n"
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"d/b.txt\"\r\n\r\n"
        "B\r\nB\r\n--B--\r\n";
    auto two = parse_envd_upload(form, "multipart/form-data; boundary=B", "", "", e);
    REQUIRE_MESSAGE(two, e.message);
    REQUIRE(two->size() == 2);
    CHECK((*two)[0].path == "a.txt");
    CHECK((*two)[0].content == "AAA");
    CHECK((*two)[1].path == "d/b.txt");
    CHECK((*two)[1].content == "B\r\nB");

    const std::string one =
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"blob\"\r\n\r\n"
        "hi\r\n--B--\r\n";
    auto named = parse_envd_upload(one, "multipart/form-data; boundary=B", "", "/work/y.txt", e);
    REQUIRE(named);
    CHECK((*named)[0].path == "y.txt");  // the query's path wins over the filename
}

TEST_CASE("POST /files refuses every bad body") {
    const std::string one =
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"
        "hi\r\n--B--\r\n";
    const std::string two =
        "--B\r\nContent-Disposition: form-data; name=\"file\"; "
        "filename=\"a.txt\"\r\n\r\nx\r\n--B\r\nContent-Disposition: "
        "form-data; name=\"file\"; filename=\"b.txt\"\r\n\r\ny\r\n--B--\r\n";
    const std::string twice =
        "--B\r\nContent-Disposition: form-data; name=\"file\"; "
        "filename=\"a.txt\"\r\n\r\nx\r\n--B\r\nContent-Disposition: "
        "form-data; name=\"file\"; filename=\"./a.txt\"\r\n\r\ny\r\n--B--\r\n";
    const std::string other_field =
        "--B\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"a.txt\"\r\n\r\n"
        "hi\r\n--B--\r\n";
    const std::string no_filename =
        "--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nhi\r\n--B--\r\n";
    const std::string escaping =
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../etc/x\"\r\n\r\n"
        "hi\r\n--B--\r\n";
    const std::string unterminated =
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhi";
    const std::string empty_form = "--B--\r\n";
    const std::string mp = "multipart/form-data; boundary=B";
    struct bad_body {
        std::string body, type, encoding, path;
        connect_code code;
    };
    for (const auto& c : std::vector<bad_body>{
             {"x", "application/octet-stream", "", "", connect_code::invalid_argument},
             {"x", "application/octet-stream", "", "/etc/x", connect_code::permission_denied},
             {"x", "application/octet-stream", "", "../x", connect_code::permission_denied},
             {"x", "application/octet-stream", "", "/home/user", connect_code::invalid_argument},
             {"x", "application/octet-stream", "gzip", "a", connect_code::invalid_argument},
             {"x", "text/plain", "", "a", connect_code::invalid_argument},
             {"x", "", "", "a", connect_code::invalid_argument},
             {one, "multipart/form-data", "", "", connect_code::invalid_argument},  // no boundary
             {two, mp, "", "/home/user/c.txt", connect_code::invalid_argument},
             {twice, mp, "", "", connect_code::invalid_argument},
             {other_field, mp, "", "", connect_code::invalid_argument},
             {no_filename, mp, "", "", connect_code::invalid_argument},
             {escaping, mp, "", "", connect_code::permission_denied},
             {unterminated, mp, "", "", connect_code::invalid_argument},
             {empty_form, mp, "", "", connect_code::invalid_argument},
         }) {
        INFO(c.type << " " << c.path << " " << c.body.substr(0, 80));
        envd_error e{connect_code::internal, 0, ""};
        CHECK_FALSE(parse_envd_upload(c.body, c.type, c.encoding, c.path, e));
        CHECK(e.code == c.code);
        CHECK_FALSE(e.message.empty());
    }
}
