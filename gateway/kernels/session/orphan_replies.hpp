#pragma once
// Replies whose client is not here: its WebSocket dropped and has not come back yet (a starved
// client, a proxy's restart, a laptop's sleep), or, for a kernel this gateway adopted
// (--state-dir), requests an earlier gateway sent. (The gateway keeps its ZeroMQ routing
// identity across a restart, kernel_record::session, so the kernel's answer to a cell that was
// running at the crash reaches the new gateway, which never saw the request.) Each such reply
// goes to the Jupyter client whose session sent
// the request (its parent header's "session", which a reconnecting client keeps:
// @jupyterlab/services and jupyter_server put it in the WebSocket URL as session_id and in
// every message), as soon as a client of that session is known; until then it waits here,
// bounded. Pure and single-threaded: the kernel session calls it on its strand.

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/kernels/session/kernel_client.hpp"
#include "kernelproto/channel.hpp"
#include "kernelproto/message.hpp"

namespace callisto::gateway::kernels {

class orphan_replies {
public:
    struct reply {
        kernelproto::channel channel;
        kernelproto::message message;
    };
    struct delivery {
        std::shared_ptr<kernel_client> client;
        reply what;
    };

    // Replies to `own_session` answer the gateway's own requests (kernel_info, shutdown), and
    // are nobody's to deliver.
    explicit orphan_replies(std::string own_session, std::size_t max_replies = 64,
                            std::size_t max_bytes = 4u << 20)
        : own_session_(std::move(own_session)), max_replies_(max_replies), max_bytes_(max_bytes) {}

    // A client of `session` is attached or has sent a message: the replies waiting for that
    // session, to send it now. An empty session is no one's.
    std::vector<reply> client_seen(const std::shared_ptr<kernel_client>& client,
                                   const std::string& session);
    void client_gone(const kernel_client* client);

    // A reply nobody here asked for: the client to send it to now, or nullopt when it was
    // kept for later (or dropped: no session, or over the bounds, oldest first).
    std::optional<delivery> arrived(kernelproto::channel ch, kernelproto::message msg);

    std::size_t waiting() const { return waiting_.size(); }

private:
    struct waiting_reply {
        std::string session;
        std::size_t bytes = 0;
        reply what;
    };

    const std::string own_session_;
    const std::size_t max_replies_;
    const std::size_t max_bytes_;
    std::size_t bytes_ = 0;
    std::deque<waiting_reply> waiting_;  // oldest first
    std::vector<std::pair<std::weak_ptr<kernel_client>, std::string>> sessions_;
};

// The "session" of a message's header, or of its parent header ("" when it has none).
std::string header_session(const kernelproto::message& msg);
std::string parent_session(const kernelproto::message& msg);

}  // namespace callisto::gateway::kernels
