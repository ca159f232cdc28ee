#include "gateway/audit/audit_log.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

using namespace callisto::gateway::audit;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
    fs::path path =
        fs::temp_directory_path() / ("callisto-audit-test-" + std::to_string(::getpid()));
    temp_dir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() { fs::remove_all(path); }
};

execution_entry entry(std::string code, std::string status = "ok") {
    execution_entry e;
    e.started = std::chrono::system_clock::time_point{} + std::chrono::hours(490000);
    e.user = "ana";
    e.api = "v1";
    e.kernel_id = "k-1";
    e.context_id = "c-1";
    e.execution_id = "e-" + std::to_string(code.size());
    e.code = std::move(code);
    e.status = std::move(status);
    e.duration = std::chrono::milliseconds(1500);
    e.output_bytes = 42;
    e.files_written = {"out.png"};
    return e;
}

std::vector<std::string> read_lines(const fs::path& file) {
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
    std::ofstream out(file, std::ios::trunc);
    for (const auto& l : lines) out << l << '\n';
}

std::string verify(std::vector<std::string> files, int expected_exit) {
    std::string report;
    CHECK(verify_files(files, report) == expected_exit);
    return report;
}

}  // namespace

TEST_CASE("audit lines chain: each holds the previous line's hash and its own") {
    auto a = chain_line({{"code", "1+1"}}, 1, genesis_hash);
    auto b = chain_line({{"code", "2+2"}}, 2, a.hash);
    CHECK(a.text.find("\"prev\":\"" + std::string(genesis_hash) + "\"") != std::string::npos);
    CHECK(b.text.find("\"prev\":\"" + a.hash + "\"") != std::string::npos);
    CHECK(b.text.substr(b.text.size() - 66, 64) == b.hash);
    chain_verifier v;
    CHECK(v.add(a.text) == "");
    CHECK(v.add(b.text) == "");
    CHECK(v.lines() == 2);
    CHECK_FALSE(v.starts_mid_chain());
}

TEST_CASE("audit verification names an edited line, a re-hashed edit and a deleted line") {
    std::vector<std::string> lines;
    std::string prev(genesis_hash);
    for (int i = 1; i <= 4; ++i) {
        auto l = chain_line({{"code", "x = " + std::to_string(i)}}, i, prev);
        lines.push_back(l.text);
        prev = l.hash;
    }
    auto check_first_broken = [&](std::vector<std::string> tampered, std::size_t expected,
                                  std::string why) {
        chain_verifier v;
        std::size_t broken = 0;
        std::string said;
        for (std::size_t i = 0; i < tampered.size() && broken == 0; ++i)
            if (auto w = v.add(tampered[i]); !w.empty()) broken = i + 1, said = w;
        CHECK(broken == expected);
        CHECK(said.find(why) != std::string::npos);
    };
    auto edited = lines;
    edited[1].replace(edited[1].find("x = 2"), 5, "x = 9");
    check_first_broken(edited, 2, "edited");

    // An edit that also recomputes its own hash is caught by the line after it.
    auto rehashed = lines;
    {
        chained_line again = chain_line({{"code", "x = 9"}}, 2,
                                        chain_line({{"code", "x = 1"}}, 1, genesis_hash).hash);
        rehashed[1] = again.text;
    }
    check_first_broken(rehashed, 3, "does not follow");

    auto deleted = lines;
    deleted.erase(deleted.begin() + 1);
    check_first_broken(deleted, 2, "does not follow");

    check_first_broken({lines[0], "{\"code\": \"not chained\"}"}, 2, "not an audit line");
}

TEST_CASE("audit log appends entries and continues its chain after a restart") {
    temp_dir dir;
    const fs::path file = dir.path / "audit.log";
    {
        audit_log log({file});
        CHECK(log.refuse_reason() == "");
        CHECK(log.record(entry("print(1)")) == "");
        CHECK(log.record(entry("1/0", "error")) == "");
    }
    {
        audit_log log({file});  // a new process: the chain goes on from the last line
        CHECK(log.record(entry("print(3)")) == "");
    }
    CHECK((fs::status(file).permissions() & fs::perms::others_read) == fs::perms::none);
    auto lines = read_lines(file);
    REQUIRE(lines.size() == 3);
    auto first = nlohmann::json::parse(lines[0]);
    CHECK(first["user"] == "ana");
    CHECK(first["api"] == "v1");
    CHECK(first["kernel"] == "k-1");
    CHECK(first["context"] == "c-1");
    CHECK(first["execution"] == "e-8");
    CHECK(first["code"] == "print(1)");
    CHECK(first["code_bytes"] == 8);
    CHECK(first["code_sha256"] == sha256_hex("print(1)"));
    CHECK(first["status"] == "ok");
    CHECK(first["duration_s"] == 1.5);
    CHECK(first["output_bytes"] == 42);
    CHECK(first["files_written"] == nlohmann::json::array({"out.png"}));
    CHECK(first["seq"] == 1);
    CHECK(nlohmann::json::parse(lines[2])["seq"] == 3);
    CHECK(verify({file.string()}, 0) == "intact: 3 lines in 1 file\n");

    // One edited and one deleted line: both are found, the first one named.
    auto tampered = lines;
    tampered[1].replace(tampered[1].find("1/0"), 3, "2/1");
    write_lines(dir.path / "edited.log", tampered);
    CHECK(verify({(dir.path / "edited.log").string()}, 1)
              .find("edited.log:2: broken: its text does not match its hash") != std::string::npos);
    write_lines(dir.path / "deleted.log", {lines[0], lines[2]});
    CHECK(verify({(dir.path / "deleted.log").string()}, 1)
              .find("deleted.log:2: broken: it does not follow") != std::string::npos);
}

TEST_CASE("audit log with --audit-code=hash keeps the code's hash and size, not the code") {
    temp_dir dir;
    audit_settings s{dir.path / "audit.log"};
    s.record_code = false;
    audit_log log(s);
    CHECK(log.record(entry("secret = 'hunter2'")) == "");
    auto line = read_lines(s.file).at(0);
    CHECK(line.find("hunter2") == std::string::npos);
    auto j = nlohmann::json::parse(line);
    CHECK_FALSE(j.contains("code"));
    CHECK(j["code_sha256"] == sha256_hex("secret = 'hunter2'"));
}

TEST_CASE("an audit line names a request other than execute_request, and user_expressions") {
    temp_dir dir;
    audit_settings s{dir.path / "audit.log"};
    {
        audit_log log(s);
        auto e = entry("");
        e.user_expressions = {{"x", "open('/etc/passwd').read()"}};
        CHECK(log.record(e) == "");
        auto d = entry("os.getuid()");
        d.request = "debug_request evaluate";
        CHECK(log.record(d) == "");
    }
    auto lines = read_lines(s.file);
    auto j = nlohmann::json::parse(lines.at(0));
    CHECK(j["user_expressions"]["x"] == "open('/etc/passwd').read()");
    CHECK(j["user_expressions_sha256"] == sha256_hex(j["user_expressions"].dump()));
    CHECK_FALSE(j.contains("request"));  // an execute_request
    auto d = nlohmann::json::parse(lines.at(1));
    CHECK(d["request"] == "debug_request evaluate");
    CHECK(d["code"] == "os.getuid()");
    CHECK_FALSE(d.contains("user_expressions"));

    // --audit-code=hash: the expressions' hash, not the expressions.
    audit_settings hashed{dir.path / "hashed.log"};
    hashed.record_code = false;
    audit_log log(hashed);
    auto e = entry("");
    e.user_expressions = {{"x", "hunter2"}};
    CHECK(log.record(e) == "");
    auto line = read_lines(hashed.file).at(0);
    CHECK(line.find("hunter2") == std::string::npos);
    CHECK(nlohmann::json::parse(line).contains("user_expressions_sha256"));
}

TEST_CASE("audit log rotates by size, keeps N files, and the chain runs through them") {
    temp_dir dir;
    audit_settings s{dir.path / "audit.log"};
    s.rotate_bytes = 2000;  // a line is ~500 bytes: a few per file
    s.keep = 3;
    {
        audit_log log(s);
        for (int i = 0; i < 30; ++i) CHECK(log.record(entry("x = " + std::to_string(i))) == "");
    }
    CHECK(fs::exists(dir.path / "audit.log.3"));
    CHECK_FALSE(fs::exists(dir.path / "audit.log.4"));
    for (auto name : {"audit.log", "audit.log.1", "audit.log.2", "audit.log.3"})
        CHECK(fs::file_size(dir.path / name) <= 2000);
    const std::vector<std::string> in_order = {
        (dir.path / "audit.log.3").string(), (dir.path / "audit.log.2").string(),
        (dir.path / "audit.log.1").string(), (dir.path / "audit.log").string()};
    auto report = verify(in_order, 0);
    CHECK(report.find("continuing a chain whose earlier files were not given") !=
          std::string::npos);
    // Out of order, the seam between two files is found.
    CHECK(verify({in_order[1], in_order[0]}, 1).find("broken") != std::string::npos);
    // The last line is the 30th execution, whatever the rotations.
    CHECK(nlohmann::json::parse(read_lines(dir.path / "audit.log").back())["seq"] == 30);
}

TEST_CASE("audit log refuses to continue a file that ends in a torn or foreign line") {
    temp_dir dir;
    const fs::path file = dir.path / "audit.log";
    {
        audit_log log({file});
        CHECK(log.record(entry("a")) == "");
    }
    { std::ofstream(file, std::ios::app) << "{\"half a li"; }
    CHECK_THROWS_WITH_AS(audit_log({file}),
                         doctest::Contains("does not end with a complete audit line"),
                         std::runtime_error);
    CHECK(verify({file.string()}, 1).find("incomplete") != std::string::npos);
    CHECK_THROWS_AS(audit_log({dir.path / "no-such-dir" / "audit.log"}), std::runtime_error);
}

TEST_CASE("audit log on a full disk fails the write and refuses what follows, then recovers") {
    temp_dir dir;
    // /dev/full accepts open() and answers every write with ENOSPC.
    audit_settings s{"/dev/full"};
    audit_log log(s);
    auto why = log.record(entry("print(1)"));
    CHECK(why.find("No space left on device") != std::string::npos);
    CHECK(log.refuse_reason().find("cannot be written") != std::string::npos);
}

TEST_CASE("audit log keeps its latest lines in memory, newest first, the code cut to 500") {
    temp_dir dir;
    audit_log log({dir.path / "audit.log"});
    CHECK(log.latest(10).empty());
    CHECK(log.record(entry("print(1)")) == "");
    // 499 ASCII bytes, then a 2-byte character across the 500th byte: cut before it.
    const std::string long_code = std::string(499, 'x') + "é" + std::string(100, 'y');
    CHECK(log.record(entry(long_code, "error")) == "");
    auto latest = log.latest(10);
    REQUIRE(latest.size() == 2);
    CHECK(latest[0]["seq"] == 2);
    CHECK(latest[0]["status"] == "error");
    CHECK(latest[0]["code"] == std::string(499, 'x') + "…");
    CHECK(latest[0]["code_bytes"] == long_code.size());
    CHECK(latest[1]["seq"] == 1);
    CHECK(latest[1]["code"] == "print(1)");
    CHECK(log.latest(1).size() == 1);
    for (int i = 0; i < 150; ++i) CHECK(log.record(entry("x")) == "");
    CHECK(log.latest(1000).size() == 100);  // bounded
    CHECK(log.latest(1)[0]["seq"] == 152);
}
