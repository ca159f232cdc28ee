#pragma once
// A kernel's clients and what reaches them: each message stamped with the kernel's next
// sequence number, iopub kept in the replay buffer for clients that reconnect with ?since=,
// WebSocket clients' output through the per-execution caps, one encoding per WebSocket format
// shared by every client of a broadcast. Runs on the kernel's strand; not thread-safe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/kernels/output/output_cap.hpp"
#include "gateway/kernels/output/output_fields.hpp"
#include "gateway/kernels/output/replay_buffer.hpp"
#include "gateway/kernels/session/kernel_client.hpp"
#include "kernelproto/channel.hpp"
#include "kernelproto/message.hpp"

namespace callisto::gateway::kernels {

class iopub_broadcaster {
public:
    // `on_connections` hears the number of clients that count as connections when it changes.
    // on_connections: the number of clients that count as connections changed.
    // on_capped: an execution's output of this kind reached its cap (once per execution).
    iopub_broadcaster(std::string session_id, std::size_t replay_bytes, output_limits limits,
                      std::function<void(std::size_t)> on_connections,
                      std::function<void(output_kind)> on_capped);

    // With `since`, the client first gets the iopub output after that sequence number the
    // replay buffer still holds, and a notice for any part it no longer holds.
    void add(const std::shared_ptr<kernel_client>& client,
             std::optional<std::uint64_t> since = std::nullopt);
    void remove(const kernel_client* client);
    // Every client is told `reason` and let go.
    void close_all(const std::string& reason);

    // Who a broadcast reaches: WebSocket clients (and the replay buffer) see capped output;
    // clients inside the gateway (the interpreter API) apply their own budgets to all of it.
    enum class audience { everyone, websockets, in_gateway };
    // Stamps the message with the next sequence number and keeps iopub for replay; a
    // broadcast to in_gateway clients only is neither stamped nor kept.
    void broadcast(kernelproto::channel ch, kernelproto::message msg,
                   audience to = audience::everyone);
    // A reply or input request to the client that asked; to a WebSocket client, an error
    // reply's fields within the caps (error_caps()).
    void send_to(const std::shared_ptr<kernel_client>& client, kernelproto::channel ch,
                 kernelproto::message msg);
    // A kernel's iopub message, through the output caps of the WebSocket clients (an error's
    // fields cut to error_caps() for them); the execution state is that of a status message
    // ("" for others).
    void relay_iopub(kernelproto::message msg, std::string_view execution_state);
    // A server-made status, with the cause of a death as `reason` (server_status.hpp).
    void broadcast_status(std::string_view execution_state, const std::string& reason = {});

    // The executions of a previous process are over: their output caps start afresh.
    void reset_executions() { output_cap_.reset(); }

    // What an error's name, value and traceback may hold on the WebSocket: no stream budget
    // counts them, so half the stream budget each for the value and the traceback (none when
    // that budget is off).
    std::optional<error_field_caps> error_caps() const;

private:
    // The message with its error fields cut for the WebSocket clients, or nullopt when it
    // goes as it is.
    std::optional<kernelproto::message> capped_error(const kernelproto::message& msg) const;

    using encoded_frames = std::array<std::shared_ptr<const kernelproto::websocket_frame>, 2>;
    // One message to one client in the form it takes; `cache` shares the encodings between
    // the clients of one broadcast (one per WebSocket format).
    void deliver(const std::shared_ptr<kernel_client>& client, kernelproto::channel ch,
                 const std::shared_ptr<const kernelproto::message>& msg,
                 encoded_frames* cache = nullptr);
    void replay_to(const std::shared_ptr<kernel_client>& client, std::uint64_t since);
    void update_connections();

    const std::string session_id_;
    std::function<void(std::size_t)> on_connections_;
    std::function<void(output_kind)> on_capped_;
    std::vector<std::weak_ptr<kernel_client>> clients_;
    std::uint64_t last_seq_ = 0;  // sequence number of the last message relayed
    replay_buffer replay_;
    output_cap output_cap_;  // WebSocket clients' per-execution output limits
};

}  // namespace callisto::gateway::kernels
