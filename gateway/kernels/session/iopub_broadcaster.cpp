#include "gateway/kernels/session/iopub_broadcaster.hpp"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "gateway/kernels/output/output_cap_notice.hpp"
#include "gateway/kernels/session/server_status.hpp"
#include "kernelproto/stream_truncation.hpp"

namespace callisto::gateway::kernels {

using kernelproto::channel;

iopub_broadcaster::iopub_broadcaster(std::string session_id, std::size_t replay_bytes,
                                     output_limits limits,
                                     std::function<void(std::size_t)> on_connections,
                                     std::function<void(output_kind)> on_capped)
    : session_id_(std::move(session_id)),
      on_connections_(std::move(on_connections)),
      on_capped_(std::move(on_capped)),
      replay_(replay_bytes),
      output_cap_(limits) {}

void iopub_broadcaster::add(const std::shared_ptr<kernel_client>& client,
                            std::optional<std::uint64_t> since) {
    // Nothing is broadcast between the replay and joining the clients: one strand.
    if (since) replay_to(client, *since);
    clients_.push_back(client);
    update_connections();
}

void iopub_broadcaster::remove(const kernel_client* client) {
    std::erase_if(clients_, [client](const auto& w) {
        auto c = w.lock();
        return !c || c.get() == client;
    });
    update_connections();
}

void iopub_broadcaster::close_all(const std::string& reason) {
    for (auto& weak : clients_)
        if (auto c = weak.lock()) c->close_from_kernel(reason);
    clients_.clear();
    update_connections();
}

void iopub_broadcaster::update_connections() {
    std::erase_if(clients_, [](const auto& w) { return w.expired(); });
    const auto n = std::count_if(clients_.begin(), clients_.end(), [](const auto& w) {
        auto c = w.lock();
        return c && c->counts_as_connection();
    });
    on_connections_(static_cast<std::size_t>(n));
}

std::optional<error_field_caps> iopub_broadcaster::error_caps() const {
    if (output_cap_.limits().stream_bytes == 0) return std::nullopt;
    return error_field_caps{.text_bytes = output_cap_.limits().stream_bytes / 2};
}

std::optional<kernelproto::message> iopub_broadcaster::capped_error(
    const kernelproto::message& msg) const {
    const auto caps = error_caps();
    // Only content that could hold a field over its cap is parsed.
    if (!caps || msg.content.size() <= std::min(caps->name_bytes, caps->text_bytes))
        return std::nullopt;
    auto content = cap_error_content(msg.content, *caps);
    if (!content) return std::nullopt;
    kernelproto::message shown;
    shown.header = msg.header;
    shown.parent_header = msg.parent_header;
    shown.metadata = msg.metadata;
    shown.content = std::move(*content);
    shown.buffers = msg.buffers;
    shown.msg_id = msg.msg_id;
    shown.msg_type = msg.msg_type;
    shown.session = msg.session;
    shown.parent_msg_id = msg.parent_msg_id;
    return shown;
}

void iopub_broadcaster::relay_iopub(kernelproto::message msg, std::string_view execution_state) {
    // No output cap counts an error: its fields are cut for the WebSocket clients; the
    // gateway's own clients cut them in their records.
    if (msg.msg_type == "error") {
        if (auto shown = capped_error(msg)) {
            broadcast(channel::iopub, std::move(msg), audience::in_gateway);
            return broadcast(channel::iopub, std::move(*shown), audience::websockets);
        }
    }
    if (!output_cap_.enabled()) return broadcast(channel::iopub, std::move(msg));
    if (execution_state == "idle") {
        // What the execution lost is said before its idle, which clients take as the end.
        for (const auto& s : output_cap_.on_idle(msg.parent_msg_id)) {
            const bool own = s.parent == msg.parent_msg_id;
            broadcast(channel::iopub,
                      dropped_output_summary(s, output_cap_.limits(),
                                             own ? std::string_view(msg.parent_header) : "{}",
                                             s.parent, session_id_),
                      audience::websockets);
        }
        return broadcast(channel::iopub, std::move(msg));
    }
    const output_kind kind = classify_output(msg.msg_type);
    if (kind == output_kind::other) return broadcast(channel::iopub, std::move(msg));

    std::size_t bytes = msg.content.size();
    for (const auto& b : msg.buffers) bytes += b.size();
    const auto verdict = output_cap_.on_output(msg.parent_msg_id, kind, bytes);
    using action = output_cap::verdict::action;
    if (verdict.what == action::pass) return broadcast(channel::iopub, std::move(msg));

    std::optional<kernelproto::message> shown;
    if (verdict.what == action::truncate) {
        if (auto cut = kernelproto::truncate_stream_text(msg.content, verdict.keep_bytes)) {
            shown.emplace();
            shown->header = msg.header;
            shown->parent_header = msg.parent_header;
            shown->metadata = msg.metadata;
            shown->content = std::move(*cut);
            shown->msg_id = msg.msg_id;
            shown->msg_type = msg.msg_type;
            shown->session = msg.session;
            shown->parent_msg_id = msg.parent_msg_id;
        }
    }
    std::optional<kernelproto::message> notice;
    if (verdict.announce) on_capped_(kind);
    if (verdict.announce)
        notice = limit_reached_notice(kind, output_cap_.limits(), msg.parent_header,
                                      msg.parent_msg_id, session_id_);
    broadcast(channel::iopub, std::move(msg), audience::in_gateway);
    if (shown) broadcast(channel::iopub, std::move(*shown), audience::websockets);
    if (notice) broadcast(channel::iopub, std::move(*notice), audience::websockets);
}

void iopub_broadcaster::broadcast(channel ch, kernelproto::message message, audience to) {
    if (to != audience::in_gateway) stamp_sequence(message, ++last_seq_);
    auto shared = std::make_shared<const kernelproto::message>(std::move(message));
    if (ch == channel::iopub && to != audience::in_gateway) replay_.add(last_seq_, shared);
    encoded_frames encoded;
    bool pruned = false;
    for (auto& weak : clients_) {
        auto client = weak.lock();
        if (!client) {
            pruned = true;
            continue;
        }
        if (to != audience::everyone && client->takes_messages() != (to == audience::in_gateway))
            continue;
        deliver(client, ch, shared, &encoded);
    }
    if (pruned) update_connections();
}

void iopub_broadcaster::send_to(const std::shared_ptr<kernel_client>& client, channel ch,
                                kernelproto::message msg) {
    if (!client->takes_messages() && (ch == channel::shell || ch == channel::control) &&
        msg.msg_type.ends_with("_reply"))
        if (auto shown = capped_error(msg)) msg = std::move(*shown);
    stamp_sequence(msg, ++last_seq_);
    deliver(client, ch, std::make_shared<const kernelproto::message>(std::move(msg)));
}

void iopub_broadcaster::deliver(const std::shared_ptr<kernel_client>& client, channel ch,
                                const std::shared_ptr<const kernelproto::message>& msg,
                                encoded_frames* cache) {
    if (client->takes_messages()) return client->deliver_message(ch, msg);
    const auto format = client->format();
    std::shared_ptr<const kernelproto::websocket_frame> uncached;
    auto& frame = cache ? (*cache)[static_cast<int>(format)] : uncached;
    if (!frame)
        frame = std::make_shared<const kernelproto::websocket_frame>(
            kernelproto::to_websocket(msg, ch, format));
    client->deliver(frame);
}

void iopub_broadcaster::replay_to(const std::shared_ptr<kernel_client>& client,
                                  std::uint64_t since) {
    auto replay = replay_.since(since, last_seq_);
    if (replay.has_gap()) {
        // Said as stderr so every client shows it; metadata carries the range for programs.
        const std::string text = "[callisto] output " + std::to_string(replay.gap_from) + "-" +
                                 std::to_string(replay.gap_to) +
                                 " was dropped from the replay buffer; what follows is complete\n";
        auto notice =
            kernelproto::make_message("stream", {{"name", "stderr"}, {"text", text}}, session_id_);
        notice.metadata =
            nlohmann::json{{"callisto_gap", {{"from", replay.gap_from}, {"to", replay.gap_to}}}}
                .dump();
        deliver(client, channel::iopub,
                std::make_shared<const kernelproto::message>(std::move(notice)));
    }
    for (const auto& entry : replay.messages) deliver(client, channel::iopub, entry.msg);
}

void iopub_broadcaster::broadcast_status(std::string_view execution_state,
                                         const std::string& reason) {
    broadcast(channel::iopub, make_server_status(execution_state, session_id_, reason));
}

}  // namespace callisto::gateway::kernels
