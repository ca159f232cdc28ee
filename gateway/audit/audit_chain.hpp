#pragma once
// The audit log's lines and the chain that makes an edit or a deletion detectable.
//
// Each line is one JSON object ending in two fields: "prev", the hash of the line before it
// (64 zeros for the first line ever), and "hash", the SHA-256 of the line's own text up to
// that field. An edited line no longer matches its own hash; an edit that recomputes it no
// longer matches the next line's "prev"; a deleted line breaks the next line's "prev" and the
// sequence numbers. Only the last line can be removed unseen, which is why the log is also
// shipped elsewhere (docs/operations.md). Pure: no files, so every case is unit-tested.

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace callisto::gateway::audit {

inline constexpr std::string_view genesis_hash =
    "0000000000000000000000000000000000000000000000000000000000000000";

// Lower-case hex SHA-256.
std::string sha256_hex(std::string_view bytes);

struct chained_line {
    std::string text;  // without the newline
    std::string hash;
};

// `record` (an object without "seq", "prev" or "hash") as the line that follows `prev_hash`.
chained_line chain_line(nlohmann::json record, std::uint64_t seq, std::string_view prev_hash);

// Checks lines in order, across files; says which line first breaks the chain and how.
class chain_verifier {
public:
    // "" when the line follows; else what is wrong with it.
    std::string add(std::string_view line);

    std::uint64_t lines() const { return lines_; }
    // The first line continued a chain whose earlier lines were not given (rotated away).
    bool starts_mid_chain() const { return starts_mid_chain_; }

private:
    std::uint64_t lines_ = 0;
    std::uint64_t last_seq_ = 0;
    std::string last_hash_;
    bool starts_mid_chain_ = false;
};

// The hash and sequence number a log's last line ends with, to continue it after a restart.
struct chain_end {
    std::string hash = std::string(genesis_hash);
    std::uint64_t seq = 0;
};
// From the last complete line of a log; nullopt-like: ok=false when it is not a chain line.
bool read_chain_end(std::string_view line, chain_end& out);

}  // namespace callisto::gateway::audit
