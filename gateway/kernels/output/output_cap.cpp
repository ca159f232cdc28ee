#include "gateway/kernels/output/output_cap.hpp"

#include <algorithm>

namespace callisto::gateway::kernels {

output_kind classify_output(std::string_view msg_type) {
    if (msg_type == "stream") return output_kind::stream;
    if (msg_type == "display_data" || msg_type == "update_display_data" ||
        msg_type == "execute_result")
        return output_kind::rich;
    return output_kind::other;
}

output_cap::output_cap(output_limits limits, std::size_t max_tracked)
    : limits_(limits), max_tracked_(std::max<std::size_t>(max_tracked, 1)) {}

output_cap::record& output_cap::touch(std::string_view parent) {
    if (auto it = index_.find(parent); it != index_.end()) {
        records_.splice(records_.begin(), records_, it->second);
        return *it->second;
    }
    if (records_.size() >= max_tracked_) {
        index_.erase(records_.back().parent);
        records_.pop_back();
    }
    records_.push_front(record{std::string(parent), {}, {}});
    index_.emplace(records_.front().parent, records_.begin());
    return records_.front();
}

output_cap::verdict output_cap::on_output(std::string_view parent, output_kind kind,
                                          std::size_t bytes, bool can_truncate) {
    verdict v;
    if (kind == output_kind::other) return v;
    const std::size_t limit =
        kind == output_kind::stream ? limits_.stream_bytes : limits_.rich_bytes;
    if (limit == 0) return v;
    record& r = touch(parent);
    budget& b = kind == output_kind::stream ? r.stream : r.rich;
    if (!b.exceeded && bytes <= limit - b.used) {  // used <= limit always holds
        b.used += bytes;
        return v;
    }
    // Over the budget: this message is the first to cross it, or a later one.
    const std::size_t room = b.exceeded ? 0 : limit - b.used;
    v.announce = !b.exceeded;
    b.exceeded = true;
    if (kind == output_kind::stream && can_truncate && room > 0) {
        v.what = verdict::action::truncate;
        v.keep_bytes = room;
        b.used = limit;
        b.lost.bytes += bytes - room;
    } else {
        v.what = verdict::action::drop;
        b.lost.bytes += bytes;
    }
    ++b.lost.messages;
    return v;
}

std::optional<output_cap::summary> output_cap::take_summary(record& r) {
    if (r.stream.lost.messages == 0 && r.rich.lost.messages == 0) return std::nullopt;
    summary s{r.parent, r.stream.lost, r.rich.lost};
    r.stream.lost = {};
    r.rich.lost = {};
    return s;
}

std::vector<output_cap::summary> output_cap::on_idle(std::string_view parent) {
    std::vector<summary> out;
    // Output without a parent belongs to no execution; each idle closes its round.
    if (auto it = index_.find(std::string_view()); it != index_.end()) {
        if (auto s = take_summary(*it->second)) out.push_back(std::move(*s));
        records_.erase(it->second);
        index_.erase(it);
    }
    if (parent.empty()) return out;
    if (auto it = index_.find(parent); it != index_.end()) {
        if (auto s = take_summary(*it->second)) out.push_back(std::move(*s));
    }
    return out;
}

void output_cap::reset() {
    index_.clear();
    records_.clear();
}

}  // namespace callisto::gateway::kernels
