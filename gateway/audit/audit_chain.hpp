#pragma once
// The audit log's lines, the keyed chain that makes an edit, an insertion or a removal
// detectable, and the anchor that makes a cut end detectable. Pure: no files, so every case
// is unit-tested.
//
// Each line is one JSON object with "seq" (1, 2, 3, ... never reused), "prev" (the previous
// line's MAC; 64 zeros for the first line ever) and, last, "mac": HMAC-SHA256, under a key
// only the gateway (and whoever verifies) holds, of the line's text up to that field. Without
// the key no one can write a line that verifies, so an edited line, even with every MAC after
// it recomputed, fails. A line removed from the middle breaks the next line's "prev"; lines
// removed from the head leave a chain that starts neither at seq 1 nor at a rotation's first
// line; lines cut from the end are found against the anchor, the last seq and MAC the gateway
// wrote, kept in a root-only file apart from the log (docs/security.md, "The audit log").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sha256.hpp"

namespace callisto::gateway::audit {

inline constexpr std::string_view genesis_mac =
    "0000000000000000000000000000000000000000000000000000000000000000";

// The chain's secret: 32 bytes, kept as 64 hex characters and a newline in a file.
class chain_key {
public:
    explicit chain_key(std::string bytes) : bytes_(std::move(bytes)) {}

    // 32 fresh random bytes.
    static chain_key generate();
    // From a key file's text; nullopt unless it is 64 hex characters (and a newline).
    static std::optional<chain_key> from_text(std::string_view text);
    std::string text() const;  // what a key file holds

    // Lower-case hex HMAC-SHA256 of `bytes` under this key.
    std::string mac_hex(std::string_view bytes) const;

private:
    std::string bytes_;
};

struct chained_line {
    std::string text;  // without the newline
    std::string mac;
};

// `record` (an object without "seq", "prev" or "mac") as the line that follows `prev_mac`.
chained_line chain_line(const chain_key& key, nlohmann::json record, std::uint64_t seq,
                        std::string_view prev_mac);

// A line whose MAC holds, read back: its record (with "seq" and "prev") and its MAC.
struct read_line {
    nlohmann::json record;
    std::uint64_t seq = 0;
    std::string prev;
    std::string mac;
};
// The line read back, or why it is not a line of this key's chain.
std::optional<read_line> parse_line(const chain_key& key, std::string_view line, std::string& why);

// The last line the gateway wrote and knew on disk: its seq and MAC, and where it ends in
// the file that held it then (the log, or after a rotation, FILE.1). MAC'd with the key too.
struct chain_anchor {
    std::string log;  // the log's path, as the gateway was given it
    std::uint64_t seq = 0;
    std::string mac;
    std::uint64_t offset = 0;  // the byte just past that line's newline
};
std::string anchor_text(const chain_key& key, const chain_anchor& anchor);
std::optional<chain_anchor> parse_anchor(const chain_key& key, std::string_view text,
                                         std::string& why);

// What `callisto audit-verify` concludes.
enum class verdict {
    proven = 0,      // every line from seq 1 to the anchor is there, authentic and in order
    broken = 1,      // a line is not authentic, or lines are missing that were not rotated away
    incomplete = 3,  // what is there is authentic and in order, but not all of it is there
};

// Checks lines in order, across files (oldest first), then the end against the anchor.
// Reports every problem, not only the first: after one, it picks the chain up again.
class chain_verifier {
public:
    // The anchor is read before the files: a gateway still writing only adds lines after it.
    chain_verifier(const chain_key& key, std::optional<chain_anchor> anchor);

    // One line; `where` names it ("audit.log.1:17") in what is reported.
    void add(std::string_view line, const std::string& where);
    // A problem found outside the lines (a file that cannot be read, a torn last line).
    void broken(const std::string& what) { broken_.push_back(what); }

    verdict finish();
    // What finish() found: the problems, then what is not proven, then a summary line.
    std::string report() const;

private:
    void start_at(const read_line& line, const std::string& where);

    const chain_key key_;
    std::optional<chain_anchor> anchor_;
    std::uint64_t lines_ = 0;
    std::uint64_t first_seq_ = 0;
    std::uint64_t last_seq_ = 0;
    std::string last_mac_;  // empty: the line before was not authentic; pick the chain up again
    bool from_genesis_ = false;
    bool starts_at_rotation_ = false;    // its first line is a rotated file's first line
    std::uint64_t deleted_through_ = 0;  // the highest seq a rotation says it deleted
    std::uint64_t deleted_at_ = 0;       // the seq of the rotation that said so
    std::string mac_at_anchor_seq_;
    std::vector<std::string> broken_;
    std::vector<std::string> unproven_;
    std::string summary_;
    verdict verdict_ = verdict::broken;
};

}  // namespace callisto::gateway::audit
