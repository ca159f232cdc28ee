#include "gateway/kernels/output/output_fields.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::kernels {

namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// How many bytes from the start of `text`, at most `n`, end between characters.
std::size_t head_length(std::string_view text, std::size_t n) {
    n = std::min(n, text.size());
    while (n > 0 && n < text.size() && continuation(text[n])) --n;
    return n;
}

// Where a tail of at most `n` bytes of `text` starts, between characters.
std::size_t tail_start(std::string_view text, std::size_t n) {
    std::size_t from = text.size() - std::min(n, text.size());
    while (from < text.size() && continuation(text[from])) ++from;
    return from;
}

}  // namespace

std::string truncation_marker(std::size_t bytes) {
    return "\n[... " + std::to_string(bytes) + " bytes truncated ...]\n";
}

std::string cap_text(std::string_view text, std::size_t max_bytes, std::size_t& cut) {
    cut = 0;
    if (text.size() <= max_bytes) return std::string(text);
    // The marker names the bytes it stands for, which depend on how much it leaves room for: the
    // longest marker this text can need is reserved.
    const std::size_t room = truncation_marker(text.size()).size();
    if (max_bytes <= room) {
        const std::size_t head = head_length(text, max_bytes);
        cut = text.size() - head;
        return std::string(text.substr(0, head));
    }
    const std::size_t keep = max_bytes - room;
    const std::size_t head = head_length(text, keep / 2);
    const std::size_t tail = tail_start(text, keep - keep / 2);
    cut = tail - head;
    std::string out(text.substr(0, head));
    out += truncation_marker(cut);
    out.append(text.substr(tail));
    return out;
}

std::vector<std::string> cap_lines(std::vector<std::string> lines, std::size_t max_bytes,
                                   std::size_t& cut) {
    cut = 0;
    std::size_t total = 0;
    for (const auto& line : lines) total += line.size();
    if (total <= max_bytes) return lines;
    const std::size_t half = max_bytes / 2;
    for (auto& line : lines) {
        if (line.size() <= half) continue;
        std::size_t line_cut = 0;
        total -= line.size();
        line = cap_text(line, half, line_cut);
        total += line.size();
        cut += line_cut;
    }
    // Cutting the long lines may have been enough: then every line stays.
    if (total <= max_bytes) return lines;
    // The first lines say where it began, the last ones what was raised.
    std::size_t first = 0, used = 0;
    while (first < lines.size() && used + lines[first].size() <= half)
        used += lines[first++].size();
    std::size_t last = lines.size();
    used = 0;
    while (last > first && used + lines[last - 1].size() <= max_bytes - half)
        used += lines[--last].size();
    if (first == last) return lines;
    std::size_t dropped = 0;
    for (std::size_t i = first; i < last; ++i) dropped += lines[i].size();
    cut += dropped;
    std::vector<std::string> out(
        std::make_move_iterator(lines.begin()),
        std::make_move_iterator(lines.begin() + static_cast<std::ptrdiff_t>(first)));
    out.push_back(truncation_marker(dropped));
    out.insert(out.end(),
               std::make_move_iterator(lines.begin() + static_cast<std::ptrdiff_t>(last)),
               std::make_move_iterator(lines.end()));
    return out;
}

std::string record_tail(const std::string& text, std::size_t keep) {
    if (text.size() <= keep) return text;
    const std::size_t from = tail_start(text, keep);
    return "[... " + std::to_string(from) + " bytes not recorded ...]\n" + text.substr(from);
}

std::optional<std::string> cap_execute_input(std::string_view content, std::size_t max_code_bytes) {
    // Anything smaller holds a code that fits, whatever its escapes.
    if (content.size() <= max_code_bytes) return std::nullopt;
    auto j = kernelproto::parse_untrusted_json(content).value;
    if (!j.is_object()) return std::nullopt;
    const auto it = j.find("code");
    if (it == j.end() || !it->is_string()) return std::nullopt;
    std::size_t cut = 0;
    auto code = cap_text(it->get_ref<const std::string&>(), max_code_bytes, cut);
    if (cut == 0) return std::nullopt;
    *it = std::move(code);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::string> cap_error_content(std::string_view content, error_field_caps caps) {
    auto parsed = kernelproto::parse_untrusted_json(content);
    auto& j = parsed.value;
    if (!j.is_object()) return std::nullopt;
    bool changed = false;
    auto cap_field = [&](const char* name, std::size_t max) {
        const auto it = j.find(name);
        if (it == j.end() || !it->is_string()) return;
        std::size_t cut = 0;
        auto text = cap_text(it->get_ref<const std::string&>(), max, cut);
        if (cut == 0) return;
        j[name] = std::move(text);
        changed = true;
    };
    cap_field("ename", caps.name_bytes);
    cap_field("evalue", caps.text_bytes);
    if (const auto it = j.find("traceback"); it != j.end() && it->is_array()) {
        // A line that is not a string is no traceback line: a cut traceback leaves it out
        // rather than let it pass uncounted.
        std::vector<std::string> lines;
        for (const auto& line : *it)
            if (line.is_string()) lines.push_back(line.get<std::string>());
        std::size_t cut = 0;
        lines = cap_lines(std::move(lines), caps.text_bytes, cut);
        if (cut > 0) {
            j["traceback"] = std::move(lines);
            changed = true;
        }
    }
    if (!changed) return std::nullopt;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace callisto::gateway::kernels
