#include "gateway/audit/audit_chain.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <stdexcept>

#include "common/encoding.hpp"
#include "kernelproto/hmac_signer.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::audit {
namespace {

constexpr std::string_view mac_field = ",\"mac\":\"";
constexpr std::string_view legacy_hash_field = ",\"hash\":\"";
constexpr std::size_t key_bytes = 32;
// Past this many, the rest of the problems are only counted: one cut can break every line.
constexpr std::size_t problems_listed = 20;

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool is_hex64(std::string_view s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

bool is_hex64_string(const nlohmann::json& v) {
    return v.is_string() && is_hex64(std::string_view(v.get_ref<const std::string&>()));
}

// The text up to a trailing `,"<field>":"<64 hex>"}`, closed, and the hex it states.
bool split_trailing(std::string_view line, std::string_view field, std::string& body,
                    std::string& stated) {
    const auto at = line.rfind(field);
    if (at == std::string_view::npos) return false;
    const auto rest = line.substr(at + field.size());
    if (rest.size() != 64 + 2 || rest.substr(64) != "\"}" || !is_hex64(rest.substr(0, 64)))
        return false;
    body = std::string(line.substr(0, at)) + "}";
    stated = std::string(rest.substr(0, 64));
    return true;
}

// A MAC'd JSON object: its record, if the MAC holds; else why not.
std::optional<nlohmann::json> open_maced(const chain_key& key, std::string_view text,
                                         std::string& mac, std::string& why) {
    std::string body;
    if (!split_trailing(text, mac_field, body, mac)) {
        std::string ignored_body, ignored_hash;
        why = split_trailing(text, legacy_hash_field, ignored_body, ignored_hash)
                  ? "an unkeyed line (written before the chain was keyed): nothing proves it "
                    "authentic"
                  : "not an audit line (no MAC at its end)";
        return std::nullopt;
    }
    const std::string expected = key.mac_hex(body);
    if (CRYPTO_memcmp(expected.data(), mac.data(), expected.size()) != 0) {
        why = "its MAC does not match its text: the line was edited, or written under another key";
        return std::nullopt;
    }
    auto parsed = kernelproto::parse_untrusted_json(body);
    if (!parsed.ok() || !parsed.value.is_object()) {
        why = "not a JSON object";
        return std::nullopt;
    }
    return std::move(parsed.value);
}

std::string seq_range(std::uint64_t from, std::uint64_t to) {
    return from == to ? "seq " + std::to_string(from)
                      : "seq " + std::to_string(from) + " to " + std::to_string(to);
}

}  // namespace

chain_key chain_key::generate() {
    std::string bytes(key_bytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), key_bytes) != 1)
        throw std::runtime_error("OpenSSL: RAND_bytes failed");
    return chain_key(std::move(bytes));
}

std::optional<chain_key> chain_key::from_text(std::string_view text) {
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    if (text.size() != key_bytes * 2) return std::nullopt;
    std::string bytes;
    for (std::size_t i = 0; i < text.size(); i += 2) {
        const int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        bytes += static_cast<char>(hi * 16 + lo);
    }
    return chain_key(std::move(bytes));
}

std::string chain_key::text() const { return to_hex(bytes_) + "\n"; }

std::string chain_key::mac_hex(std::string_view bytes) const {
    return to_hex(kernelproto::hmac_signer::hmac_sha256(bytes_, bytes));
}

chained_line chain_line(const chain_key& key, nlohmann::json record, std::uint64_t seq,
                        std::string_view prev_mac) {
    record["seq"] = seq;
    record["prev"] = std::string(prev_mac);
    // nlohmann keeps keys sorted, so "prev" and "seq" land where they land; what is MAC'd is
    // exactly the text written, up to the MAC field appended last.
    std::string body = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    chained_line out;
    out.mac = key.mac_hex(body);
    body.pop_back();  // the closing brace
    out.text = body + std::string(mac_field) + out.mac + "\"}";
    return out;
}

std::optional<read_line> parse_line(const chain_key& key, std::string_view line, std::string& why) {
    read_line out;
    auto record = open_maced(key, line, out.mac, why);
    if (!record) return std::nullopt;
    const auto seq = record->value("seq", nlohmann::json());
    if (!seq.is_number_unsigned() || seq.get<std::uint64_t>() == 0) {
        why = "no valid \"seq\" number";
        return std::nullopt;
    }
    const auto prev = record->value("prev", nlohmann::json());
    if (!is_hex64_string(prev)) {
        why = "no valid \"prev\" MAC";
        return std::nullopt;
    }
    out.seq = seq.get<std::uint64_t>();
    out.prev = prev.get<std::string>();
    out.record = std::move(*record);
    return out;
}

std::string anchor_text(const chain_key& key, const chain_anchor& anchor) {
    nlohmann::json body = {{"anchor", 1},
                           {"log", anchor.log},
                           {"seq", anchor.seq},
                           {"line_mac", anchor.mac},
                           {"offset", anchor.offset}};
    std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const std::string mac = key.mac_hex(text);
    text.pop_back();
    return text + std::string(mac_field) + mac + "\"}\n";
}

std::optional<chain_anchor> parse_anchor(const chain_key& key, std::string_view text,
                                         std::string& why) {
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    std::string mac;
    auto record = open_maced(key, text, mac, why);
    if (!record) return std::nullopt;
    const auto& r = *record;
    if (r.value("anchor", 0) != 1 || !r.contains("log") || !r["log"].is_string() ||
        !r.contains("seq") || !r["seq"].is_number_unsigned() ||
        !is_hex64_string(r.value("line_mac", nlohmann::json())) || !r.contains("offset") ||
        !r["offset"].is_number_unsigned()) {
        why = "not an audit anchor";
        return std::nullopt;
    }
    chain_anchor out;
    out.log = r["log"].get<std::string>();
    out.seq = r["seq"].get<std::uint64_t>();
    out.mac = r["line_mac"].get<std::string>();
    out.offset = r["offset"].get<std::uint64_t>();
    return out;
}

chain_verifier::chain_verifier(const chain_key& key, std::optional<chain_anchor> anchor)
    : key_(key), anchor_(std::move(anchor)) {}

void chain_verifier::start_at(const read_line& line, const std::string& where) {
    first_seq_ = line.seq;
    if (line.seq == 1 && line.prev == genesis_mac) {
        from_genesis_ = true;
    } else if (line.record.value("event", "") == "rotate") {
        starts_at_rotation_ = true;
    } else {
        broken_.push_back(where + ": broken: the chain starts here, at seq " +
                          std::to_string(line.seq) +
                          ", neither the first line ever nor the first line of a rotated file: "
                          "the lines before it were removed");
    }
}

void chain_verifier::add(std::string_view text, const std::string& where) {
    ++lines_;
    std::string why;
    auto line = parse_line(key_, text, why);
    if (!line) {
        broken_.push_back(where + ": broken: " + why);
        // What follows is checked against nothing until a line is authentic, but for its seq:
        // this line took one, so a line removed after it still shows.
        last_mac_.clear();
        if (last_seq_ != 0) ++last_seq_;
        return;
    }
    const std::string event = line->record.value("event", "");
    if (first_seq_ == 0) {
        if (lines_ == 1)
            start_at(*line, where);
        else
            first_seq_ = line->seq;  // the lines before were broken, and said so
    } else if (!last_mac_.empty()) {
        if (line->prev != last_mac_)
            broken_.push_back(where +
                              ": broken: it does not follow the line before it (lines between "
                              "them were removed, or the files are out of order)");
        else if (line->seq != last_seq_ + 1 && event != "truncated")
            broken_.push_back(where + ": broken: seq " + std::to_string(line->seq) + " follows " +
                              std::to_string(last_seq_) + " (lines are missing)");
    } else if (last_seq_ != 0 && line->seq != last_seq_ + 1 && event != "truncated") {
        broken_.push_back(where + ": broken: seq " + std::to_string(line->seq) + " where " +
                          std::to_string(last_seq_ + 1) + " was due (lines are missing)");
    }
    if (event == "truncated") {
        const auto found = line->record.value("found_seq", std::uint64_t{0});
        const auto anchored = line->record.value("anchor_seq", std::uint64_t{0});
        broken_.push_back(
            where + ": broken: at this start the gateway found its log cut: it ended at seq " +
            std::to_string(found) + ", but the gateway had written up to seq " +
            std::to_string(anchored) + " (its anchor)" +
            (anchored > found ? "; " + seq_range(found + 1, anchored) + " are gone"
                              : "; the line it ended with is not the one it wrote"));
    } else if (event == "rotate") {
        const auto through = line->record.value("deleted_through", std::uint64_t{0});
        if (through > deleted_through_) {
            deleted_through_ = through;
            deleted_at_ = line->seq;
        }
    } else if (event == "open" && line->record.value("anchor_state", "") == "missing") {
        unproven_.push_back(where + ": at this start (seq " + std::to_string(line->seq) +
                            ") the gateway found no anchor: lines cut from the log's end before "
                            "it would not show");
    }
    last_seq_ = line->seq;
    last_mac_ = line->mac;
    if (anchor_ && line->seq == anchor_->seq) mac_at_anchor_seq_ = line->mac;
}

verdict chain_verifier::finish() {
    if (lines_ == 0) broken_.push_back("no audit lines: nothing is proven");
    if (starts_at_rotation_) {
        const std::uint64_t before = first_seq_ - 1;
        if (deleted_through_ == before) {
            unproven_.push_back(
                seq_range(1, before) +
                " were deleted by rotation (--audit-keep), as the rotation at seq " +
                std::to_string(deleted_at_) + " records: nothing about them is proven");
        } else if (deleted_through_ < before) {
            broken_.push_back(seq_range(deleted_through_ + 1, before) +
                              " are not in the files given, and no rotation deleted them: give "
                              "the earlier rotated files too (oldest first), or they were removed");
        } else {
            broken_.push_back("a rotation at seq " + std::to_string(deleted_at_) +
                              " says it deleted up to seq " + std::to_string(deleted_through_) +
                              ", yet the files start at seq " + std::to_string(first_seq_));
        }
    }
    if (lines_ != 0) {
        if (!anchor_) {
            unproven_.push_back(
                "the end is not proven: no anchor was given (--anchor, the file the gateway keeps "
                "beside its key): lines cut from the end would not show");
        } else if (last_seq_ < anchor_->seq) {
            broken_.push_back("the files end at seq " + std::to_string(last_seq_) +
                              ", but the gateway had written up to seq " +
                              std::to_string(anchor_->seq) + " (its anchor): " +
                              seq_range(last_seq_ + 1, anchor_->seq) + " were cut from the end");
        } else if (mac_at_anchor_seq_.empty()) {
            broken_.push_back("the anchor's last line, seq " + std::to_string(anchor_->seq) +
                              ", is not in the files given");
        } else if (mac_at_anchor_seq_ != anchor_->mac) {
            broken_.push_back("the line with seq " + std::to_string(anchor_->seq) +
                              " is not the line the gateway wrote (the anchor's MAC differs)");
        }
    }
    const std::string span =
        std::to_string(lines_) + (lines_ == 1 ? " line" : " lines") +
        (lines_ ? ", " + seq_range(first_seq_ ? first_seq_ : last_seq_, last_seq_) : "");
    if (!broken_.empty()) {
        verdict_ = verdict::broken;
        summary_ = "BROKEN: " + std::to_string(broken_.size()) +
                   (broken_.size() == 1 ? " problem" : " problems") + " (" + span + ")";
    } else if (!unproven_.empty()) {
        verdict_ = verdict::incomplete;
        summary_ = "NOT COMPLETE: every line given is authentic and in order (" + span +
                   "), but not all of the log is proven: see above";
    } else {
        verdict_ = verdict::proven;
        summary_ = "intact: " + span +
                   ", every line authentic and in order from the first line ever, none missing, "
                   "none cut from the end (its anchor, seq " +
                   std::to_string(anchor_->seq) + ")";
        if (last_seq_ > anchor_->seq)
            summary_ += "; " + seq_range(anchor_->seq + 1, last_seq_) +
                        " were written after the anchor was read";
    }
    return verdict_;
}

std::string chain_verifier::report() const {
    std::string out;
    for (std::size_t i = 0; i < broken_.size() && i < problems_listed; ++i)
        out += broken_[i] + "\n";
    if (broken_.size() > problems_listed)
        out += "... and " + std::to_string(broken_.size() - problems_listed) + " more problems\n";
    for (const auto& u : unproven_) out += "not proven: " + u + "\n";
    return out + summary_ + "\n";
}

}  // namespace callisto::gateway::audit
