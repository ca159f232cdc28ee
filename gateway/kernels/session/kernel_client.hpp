#pragma once
// What a kernel_session knows of a connected client (a WebSocket today). Calls arrive on the
// kernel's strand: implementations hand the work to their own strand and return at once.

#include <memory>
#include <string>

#include "kernelproto/websocket_format.hpp"

namespace callisto::gateway::kernels {

class kernel_client {
public:
    virtual ~kernel_client() = default;

    virtual kernelproto::websocket_format format() const = 0;

    // One encoded frame, shared between the clients that use the same format.
    virtual void deliver(std::shared_ptr<const kernelproto::websocket_frame> frame) = 0;

    // Clients inside the gateway (the interpreter API) answer true and receive the messages
    // themselves through deliver_message(), with no WebSocket encoding to undo.
    virtual bool takes_messages() const { return false; }
    virtual void deliver_message(kernelproto::channel,
                                 std::shared_ptr<const kernelproto::message>) {}

    // Whether it shows in the kernel model's `connections`, which the culling rules read as
    // "someone is watching": true for WebSockets; false for the interpreter API's contexts,
    // which are always attached and idle between their owner's calls.
    virtual bool counts_as_connection() const { return true; }

    // Who is behind it, for the audit log ("" when unknown).
    virtual std::string user_name() const { return {}; }

    // The Jupyter session it named when it connected (a WebSocket URL's session_id), "" when
    // none: replies to requests it sent before a gateway restart find it by that.
    virtual std::string jupyter_session() const { return {}; }

    // The kernel is gone (deleted, or the server is stopping): close with this reason.
    virtual void close_from_kernel(std::string reason) = 0;
};

}  // namespace callisto::gateway::kernels
