#include "gateway/interpreter/snapshot_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include <doctest/doctest.h>

#include "common/sha256.hpp"
#include "common/unique_fd.hpp"

namespace fs = std::filesystem;
using namespace callisto::gateway;
using namespace callisto::gateway::interpreter;

namespace {

const std::string id1 = "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11";
const std::string id2 = "1b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a12";
const std::string id3 = "2b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a13";

struct temp_dir {
    fs::path path =
        fs::temp_directory_path() / ("callisto-snapshots-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    ~temp_dir() { fs::remove_all(path); }
};

// A workdir as a kernel leaves it after saving: the blob and two files.
struct sample_workdir {
    temp_dir t;
    const std::string blob = std::string("\x80\x05pickled\0bytes", 15);
    sample_workdir() {
        fs::create_directories(t.path / "sub/dir");
        put("blob", blob);
        put("data.csv", "a,b\n1,2\n");
        put("sub/dir/notes.txt", "hello");
    }
    void put(const std::string& rel, const std::string& bytes) const {
        std::ofstream(t.path / rel, std::ios::binary | std::ios::trunc) << bytes;
    }
    const fs::path& path() const { return t.path; }
};

snapshot_content sample() {
    snapshot_content c;
    c.language = "python";
    c.namespace_path = "blob";
    c.files = {"data.csv", "sub/dir/notes.txt"};
    c.carried = {"df", "f"};
    c.not_carried = nlohmann::json::array(
        {{{"name", "g"}, {"type", "builtins.generator"}, {"reason", "a generator"}}});
    c.source_context = "9b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a19";
    c.duration_ms = 12;
    return c;
}

// Through rdbuf: GCC sees a null streambuf in istreambuf_iterator (a false positive).
std::string read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

const user alice{"alice"};
const user bob{"bob"};

void overwrite(const fs::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

int status_of(const std::variant<stored_snapshot, snapshot_error>& r) {
    return std::holds_alternative<snapshot_error>(r) ? std::get<snapshot_error>(r).http_status
                                                     : 200;
}

std::string message_of(const std::variant<stored_snapshot, snapshot_error>& r) {
    return std::holds_alternative<snapshot_error>(r) ? std::get<snapshot_error>(r).message : "";
}

}  // namespace

TEST_CASE("snapshot store: a saved snapshot reads back whole, with its checksums") {
    temp_dir t;
    sample_workdir w;
    snapshot_store store(t.path, {});
    auto saved = store.save(id1, "alice", sample(), w.path());
    REQUIRE(std::holds_alternative<nlohmann::json>(saved));
    const auto& model = std::get<nlohmann::json>(saved);
    CHECK(model["id"] == id1);
    CHECK(model["owner"] == "alice");
    CHECK(model["size"] == 15 + 8 + 5);
    CHECK(model["files"].size() == 2);
    CHECK(model["not_carried"][0]["name"] == "g");
    auto loaded = store.load_for(id1, alice);
    REQUIRE(std::holds_alternative<stored_snapshot>(loaded));
    const auto& c = std::get<stored_snapshot>(loaded);
    REQUIRE(c.pieces.size() == 3);
    CHECK(c.pieces[0].is_namespace);
    CHECK(read_all(c.pieces[0].file) == w.blob);
    CHECK(c.pieces[2].path == "sub/dir/notes.txt");
    CHECK(read_all(c.pieces[2].file) == "hello");
    CHECK(c.pieces[2].size == 5);
    CHECK(c.carried == nlohmann::json({"df", "f"}));
    CHECK(store.list_for(alice).size() == 1);
    CHECK(std::holds_alternative<nlohmann::json>(store.get_for(id1, alice)));
}

TEST_CASE("snapshot store: another user's snapshot is not found; an admin's is") {
    temp_dir t;
    sample_workdir w;
    snapshot_store store(t.path, {});
    REQUIRE(std::holds_alternative<nlohmann::json>(store.save(id1, "alice", sample(), w.path())));
    CHECK(status_of(store.load_for(id1, bob)) == 404);
    CHECK(std::get<snapshot_error>(store.get_for(id1, bob)).http_status == 404);
    CHECK(store.list_for(bob).empty());
    REQUIRE(store.remove_for(id1, bob));
    CHECK(store.remove_for(id1, bob)->http_status == 404);
    CHECK(status_of(store.load_for(id1, user{"root", true})) == 200);
    CHECK_FALSE(store.remove_for(id1, alice));
    CHECK(status_of(store.load_for(id1, alice)) == 404);
    CHECK(store.list_for(alice).empty());
}

TEST_CASE("snapshot store: ids that are not ids, path traversal among them, are not found") {
    temp_dir t;
    sample_workdir w;
    snapshot_store store(t.path, {});
    for (const std::string bad :
         {"", "..", "../etc", "../../etc/passwd", "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a1",
          "0B7C2A2E-6C1F-4C3E-9A55-0D5D0E0C9A11", "0b7c2a2e/6c1f-4c3e-9a55-0d5d0e0c9a11",
          "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11/..", "%2e%2e",
          "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a1\n"}) {
        CAPTURE(bad);
        CHECK_FALSE(snapshot_store::valid_id(bad));
        CHECK(status_of(store.load_for(bad, alice)) == 404);
        CHECK(store.remove_for(bad, alice)->http_status == 404);
        auto saved = store.save(bad, "alice", sample(), w.path());
        REQUIRE(std::holds_alternative<snapshot_error>(saved));
        CHECK(std::get<snapshot_error>(saved).http_status == 400);
    }
    CHECK(snapshot_store::valid_id(id1));
}

TEST_CASE("snapshot store: files outside the workdir or named twice are refused on save") {
    temp_dir t;
    sample_workdir w;
    snapshot_store store(t.path, {});
    for (const std::string bad : {"../x", "/etc/passwd", "a/../../b", "", "a//b", "./a"}) {
        CAPTURE(bad);
        auto c = sample();
        c.files.push_back(bad);
        auto saved = store.save(id1, "alice", c, w.path());
        REQUIRE(std::holds_alternative<snapshot_error>(saved));
        CHECK(std::get<snapshot_error>(saved).http_status == 400);
    }
    auto c = sample();
    c.files.push_back("data.csv");
    CHECK(std::holds_alternative<snapshot_error>(store.save(id1, "alice", c, w.path())));
    CHECK(store.list_for(alice).empty());
}

TEST_CASE("snapshot store: a quota of count and bytes per user, others unaffected") {
    temp_dir t;
    sample_workdir w;
    const std::uint64_t one = 28;  // sample()'s bytes
    snapshot_store store(t.path, {2, 3 * one});
    REQUIRE(std::holds_alternative<nlohmann::json>(store.save(id1, "alice", sample(), w.path())));
    REQUIRE(std::holds_alternative<nlohmann::json>(store.save(id2, "alice", sample(), w.path())));
    auto third = store.save(id3, "alice", sample(), w.path());
    REQUIRE(std::holds_alternative<snapshot_error>(third));
    CHECK(std::get<snapshot_error>(third).http_status == 507);
    CHECK(std::get<snapshot_error>(third).message.find("quota") != std::string::npos);
    CHECK(std::holds_alternative<nlohmann::json>(store.save(id3, "bob", sample(), w.path())));
    // Deleting one frees its place.
    REQUIRE_FALSE(store.remove_for(id2, alice));
    auto big = sample();
    w.put("big.bin", std::string(3 * one, 'x'));
    big.files.push_back("big.bin");
    auto too_big = store.save(id2, "alice", big, w.path());
    REQUIRE(std::holds_alternative<snapshot_error>(too_big));
    CHECK(std::get<snapshot_error>(too_big).message.find("bytes") != std::string::npos);
    CHECK(std::holds_alternative<nlohmann::json>(store.save(id2, "alice", sample(), w.path())));
}

TEST_CASE("snapshot store: a corrupt, truncated, missing or extra piece is refused with why") {
    temp_dir t;
    sample_workdir w;
    snapshot_store store(t.path, {});
    auto fresh = [&] {
        store.remove_for(id1, alice);
        REQUIRE(
            std::holds_alternative<nlohmann::json>(store.save(id1, "alice", sample(), w.path())));
        return t.path / id1;
    };

    auto dir = fresh();
    overwrite(dir / "1", "a,b\n1,3\n");  // same size, other bytes
    CHECK(status_of(store.load_for(id1, alice)) == 422);
    CHECK(message_of(store.load_for(id1, alice)).find("data.csv does not match its SHA-256") !=
          std::string::npos);

    dir = fresh();
    overwrite(dir / "0", "\x80\x05pick");
    CHECK(message_of(store.load_for(id1, alice)).find("the namespace has 6 bytes") !=
          std::string::npos);

    dir = fresh();
    fs::remove(dir / "2");
    CHECK(message_of(store.load_for(id1, alice)).find("sub/dir/notes.txt is missing") !=
          std::string::npos);

    dir = fresh();
    overwrite(dir / "3", "planted");
    CHECK(message_of(store.load_for(id1, alice)).find("does not name: 3") != std::string::npos);

    dir = fresh();
    overwrite(dir / "2", "hello, and more");
    CHECK(message_of(store.load_for(id1, alice)).find("larger") != std::string::npos);

    dir = fresh();
    fs::remove(dir / "1");
    fs::create_symlink("/etc/passwd", dir / "1");
    CHECK(status_of(store.load_for(id1, alice)) == 422);

    // The snapshot is still there, and still its owner's to delete.
    CHECK(store.list_for(alice).size() == 1);
    CHECK_FALSE(store.remove_for(id1, alice));
}

TEST_CASE("snapshot store: a manifest edited without its checksum, or not JSON, is refused") {
    temp_dir t;
    sample_workdir w;
    snapshot_store store(t.path, {});
    REQUIRE(std::holds_alternative<nlohmann::json>(store.save(id1, "alice", sample(), w.path())));
    const auto manifest_path = t.path / id1 / "manifest.json";
    std::ifstream in(manifest_path);
    auto manifest = nlohmann::json::parse(in);
    in.close();

    // A piece pointed outside the workdir, checksum recomputed: refused all the same.
    auto outside = manifest;
    outside["pieces"][1]["path"] = "../../etc/cron.d/x";
    outside["checksum"] = snapshot_store::manifest_checksum(outside);
    overwrite(manifest_path, outside.dump());
    CHECK(message_of(store.load_for(id1, alice)).find("outside the workdir") != std::string::npos);

    auto edited = manifest;
    edited["pieces"][1]["size"] = 4;
    overwrite(manifest_path, edited.dump());
    CHECK(message_of(store.load_for(id1, alice)).find("checksum") != std::string::npos);

    auto renamed = manifest;
    renamed["pieces"][1]["name"] = "../../../etc/passwd";
    renamed["checksum"] = snapshot_store::manifest_checksum(renamed);
    overwrite(manifest_path, renamed.dump());
    CHECK(message_of(store.load_for(id1, alice)).find("names a piece") != std::string::npos);

    overwrite(manifest_path, "{\"owner\": \"alice\", \"pieces\": ");
    CHECK(status_of(store.load_for(id1, alice)) == 404);
    CHECK(store.list_for(alice).empty());
}

TEST_CASE("snapshot store: a save a crash interrupted is removed after a restart, once old") {
    temp_dir t;
    {
        snapshot_store store(t.path, {});
        for (const auto& id : {id1, id2}) {
            fs::create_directory(t.path / (".tmp-" + id));
            overwrite(t.path / (".tmp-" + id) / "0", "half");
        }
        // id1's was left by a crash an hour and more ago; id2's is being written by another
        // replica sharing the directory.
        fs::last_write_time(t.path / (".tmp-" + id1), fs::file_time_type::clock::now() -
                                                          snapshot_store::leftover_age -
                                                          std::chrono::minutes(1));
    }
    snapshot_store again(t.path, {});
    CHECK_FALSE(fs::exists(t.path / (".tmp-" + id1)));
    CHECK(fs::exists(t.path / (".tmp-" + id2) / "0"));
    CHECK(again.list_for(alice).empty());
}

namespace {

// The process's VmHWM, in KiB, after clear_refs reset it to the current RSS.
long peak_kib() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

TEST_CASE("snapshot store: a piece far larger than the buffer passes through it, not memory") {
    temp_dir t;
    sample_workdir w;
    // 64 MiB of zeros, sparse: nothing of it is in this process until something reads it.
    const std::uint64_t big = 64ull << 20;
    fs::resize_file(w.path() / "blob", big);
    snapshot_store store(t.path, {});
    reset_peak();
    const long before = peak_kib();
    auto saved = store.save(id1, "alice", sample(), w.path());
    REQUIRE(std::holds_alternative<nlohmann::json>(saved));
    CHECK(std::get<nlohmann::json>(saved)["size"] == big + 8 + 5);
    auto loaded = store.load_for(id1, alice);
    REQUIRE(std::holds_alternative<stored_snapshot>(loaded));
    CHECK(std::get<stored_snapshot>(loaded).pieces[0].size == big);
    // The buffer is 1 MiB; a piece read whole would have added 64.
    CHECK(peak_kib() - before < 16 * 1024);
    CHECK(copy_buffer_bytes * 16 < big);
}

TEST_CASE("snapshot store: copy_hashing hashes what it copies and stops past its limit") {
    temp_dir t;
    sample_workdir w;
    const std::string bytes(3 * copy_buffer_bytes + 7, 'q');
    w.put("in", bytes);
    callisto::unique_fd in(::open((w.path() / "in").c_str(), O_RDONLY));
    callisto::unique_fd out(::open((w.path() / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
    auto r = copy_hashing(in.get(), out.get(), bytes.size());
    CHECK(r.error == 0);
    CHECK(r.bytes == bytes.size());
    CHECK(r.sha256 == callisto::sha256_hex(bytes));
    CHECK(read_all(w.path() / "out") == bytes);
    ::lseek(in.get(), 0, SEEK_SET);
    CHECK(copy_hashing(in.get(), -1, bytes.size() - 1).error == EFBIG);
}

TEST_CASE("snapshot store: a piece missing from the workdir, or past the quota, leaves nothing") {
    temp_dir t;
    sample_workdir w;
    snapshot_store store(t.path, {20, 100});
    auto c = sample();
    c.files.push_back("not-there.txt");
    auto missing = store.save(id1, "alice", c, w.path());
    REQUIRE(std::holds_alternative<snapshot_error>(missing));
    CHECK(std::get<snapshot_error>(missing).message.find("not-there.txt") != std::string::npos);
    // Past the quota on the last piece, after others were copied.
    w.put("big.bin", std::string(200, 'x'));
    c = sample();
    c.files.push_back("big.bin");
    auto too_big = store.save(id1, "alice", c, w.path());
    REQUIRE(std::holds_alternative<snapshot_error>(too_big));
    CHECK(std::get<snapshot_error>(too_big).http_status == 507);
    CHECK(fs::is_empty(t.path));
    CHECK(std::holds_alternative<nlohmann::json>(store.save(id1, "alice", sample(), w.path())));
}
