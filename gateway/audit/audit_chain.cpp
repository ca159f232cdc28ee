#include "gateway/audit/audit_chain.hpp"

#include <openssl/evp.h>

#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::audit {
namespace {

constexpr std::string_view hash_field = ",\"hash\":\"";

bool is_hex64(const nlohmann::json& v) {
    if (!v.is_string()) return false;
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() != 64) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

// The line's text up to its hash field, closed, and the hash it states.
bool split_hash(std::string_view line, std::string& body, std::string& stated) {
    const auto at = line.rfind(hash_field);
    if (at == std::string_view::npos) return false;
    const auto rest = line.substr(at + hash_field.size());
    if (rest.size() != 64 + 2 || rest.substr(64) != "\"}") return false;
    body = std::string(line.substr(0, at)) + "}";
    stated = std::string(rest.substr(0, 64));
    return true;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(bytes.data(), bytes.size(), out, &len, EVP_sha256(), nullptr);
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(len * 2);
    for (unsigned int i = 0; i < len; ++i) {
        hex += digits[out[i] >> 4];
        hex += digits[out[i] & 15];
    }
    return hex;
}

chained_line chain_line(nlohmann::json record, std::uint64_t seq, std::string_view prev_hash) {
    record["seq"] = seq;
    record["prev"] = std::string(prev_hash);
    // nlohmann keeps keys sorted, so "prev" and "seq" land where they land; what is hashed
    // is exactly the text written, up to the hash field appended last.
    std::string body = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    chained_line out;
    out.hash = sha256_hex(body);
    body.pop_back();  // the closing brace
    out.text = body + std::string(hash_field) + out.hash + "\"}";
    return out;
}

std::string chain_verifier::add(std::string_view line) {
    std::string body, stated;
    if (!split_hash(line, body, stated)) return "not an audit line (no hash at its end)";
    if (sha256_hex(body) != stated) return "its text does not match its hash: the line was edited";
    auto parsed = kernelproto::parse_untrusted_json(body);
    if (!parsed.ok() || !parsed.value.is_object()) return "not a JSON object";
    const auto& rec = parsed.value;
    if (!is_hex64(rec.value("prev", nlohmann::json()))) return "no valid \"prev\" hash";
    const auto seq_field = rec.value("seq", nlohmann::json());
    if (!seq_field.is_number_unsigned()) return "no valid \"seq\" number";
    const std::uint64_t seq = seq_field.get<std::uint64_t>();
    const std::string prev = rec["prev"].get<std::string>();
    if (lines_ == 0) {
        starts_mid_chain_ = prev != genesis_hash;
    } else {
        if (prev != last_hash_)
            return "it does not follow the line before (that line was edited, or lines "
                   "between them were removed)";
        if (seq != last_seq_ + 1)
            return "seq " + std::to_string(seq) + " follows " + std::to_string(last_seq_) +
                   " (lines are missing)";
    }
    ++lines_;
    last_seq_ = seq;
    last_hash_ = stated;
    return {};
}

bool read_chain_end(std::string_view line, chain_end& out) {
    std::string body, stated;
    if (!split_hash(line, body, stated) || sha256_hex(body) != stated) return false;
    auto parsed = kernelproto::parse_untrusted_json(body);
    if (!parsed.ok() || !parsed.value.is_object()) return false;
    const auto seq = parsed.value.value("seq", nlohmann::json());
    if (!seq.is_number_unsigned()) return false;
    out.hash = stated;
    out.seq = seq.get<std::uint64_t>();
    return true;
}

}  // namespace callisto::gateway::audit
