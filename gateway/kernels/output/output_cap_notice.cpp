#include "gateway/kernels/output/output_cap_notice.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace callisto::gateway::kernels {

namespace {

kernelproto::message stderr_message(std::string text, const nlohmann::json& metadata,
                                    std::string_view parent_header, std::string_view parent_msg_id,
                                    std::string_view session) {
    auto msg = kernelproto::make_message("stream", {{"name", "stderr"}, {"text", std::move(text)}},
                                         session);
    msg.parent_header = parent_header.empty() ? "{}" : std::string(parent_header);
    msg.parent_msg_id = std::string(parent_msg_id);
    msg.metadata = nlohmann::json{{"callisto_output_limit", metadata}}.dump();
    return msg;
}

const char* what(output_kind kind) {
    return kind == output_kind::stream ? "stdout/stderr" : "rich output (displays and results)";
}

const char* flag(output_kind kind) {
    return kind == output_kind::stream ? "--ws-output-limit" : "--ws-rich-output-limit";
}

std::size_t limit_of(output_kind kind, const output_limits& limits) {
    return kind == output_kind::stream ? limits.stream_bytes : limits.rich_bytes;
}

}  // namespace

std::string human_bytes(std::size_t bytes) {
    static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
    double v = static_cast<double>(bytes) / 1024;
    std::size_t u = 0;
    while (v >= 1024 && u + 1 < std::size(units)) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    if (v == static_cast<double>(static_cast<std::size_t>(v)))
        std::snprintf(buf, sizeof buf, "%zu %s", static_cast<std::size_t>(v), units[u]);
    else
        std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

kernelproto::message limit_reached_notice(output_kind kind, const output_limits& limits,
                                          std::string_view parent_header,
                                          std::string_view parent_msg_id,
                                          std::string_view session) {
    const std::size_t limit = limit_of(kind, limits);
    std::string text = "\n[callisto] output limit reached: further " + std::string(what(kind)) +
                       " of this cell is not shown (limit " + human_bytes(limit) + " per cell, " +
                       flag(kind) + "); the cell keeps running\n";
    return stderr_message(
        std::move(text),
        {{"kind", kind == output_kind::stream ? "stream" : "rich"}, {"limit", limit}},
        parent_header, parent_msg_id, session);
}

kernelproto::message dropped_output_summary(const output_cap::summary& summary,
                                            const output_limits& limits,
                                            std::string_view parent_header,
                                            std::string_view parent_msg_id,
                                            std::string_view session) {
    std::string parts;
    nlohmann::json dropped = nlohmann::json::object();
    auto add = [&](output_kind kind, const output_cap::dropped& d, const char* key) {
        if (d.messages == 0) return;
        if (!parts.empty()) parts += " and ";
        parts += human_bytes(d.bytes) + " (" + std::to_string(d.bytes) + " bytes, " +
                 std::to_string(d.messages) + (d.messages == 1 ? " message" : " messages") +
                 ") of " + what(kind) + " (limit " + human_bytes(limit_of(kind, limits)) + ")";
        dropped[key] = {
            {"bytes", d.bytes}, {"messages", d.messages}, {"limit", limit_of(kind, limits)}};
    };
    add(output_kind::stream, summary.stream, "stream");
    add(output_kind::rich, summary.rich, "rich");
    std::string text = "[callisto] output limit: " + parts + " from this " +
                       (summary.parent.empty() ? std::string("kernel output") : "cell") +
                       " were not shown\n";
    return stderr_message(std::move(text), {{"dropped", dropped}}, parent_header, parent_msg_id,
                          session);
}

kernelproto::message flood_dropped_notice(std::uint64_t messages, std::uint64_t bytes,
                                          std::size_t budget, std::string_view parent_header,
                                          std::string_view parent_msg_id,
                                          std::string_view session) {
    std::string text = "\n[callisto] " + std::to_string(messages) + " kernel message" +
                       (messages == 1 ? "" : "s") + " (" + human_bytes(bytes) +
                       ") dropped: the kernel sent output faster than it could be passed on (" +
                       human_bytes(budget) + " held per kernel, --kernel-buffer)\n";
    return stderr_message(
        std::move(text),
        {{"reason", "kernel_flood"}, {"dropped_messages", messages}, {"dropped_bytes", bytes}},
        parent_header, parent_msg_id, session);
}

}  // namespace callisto::gateway::kernels
