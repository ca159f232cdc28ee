#pragma once
// A client inside the gateway (an interpreter context, a reset in progress): it takes the
// messages themselves through deliver_message(), and is no connection to the culling rules.
// Frames, if any reach it, are v1's.

#include "gateway/kernels/session/kernel_client.hpp"

namespace callisto::gateway::kernels {

class in_process_client : public kernel_client {
public:
    kernelproto::websocket_format format() const override {
        return kernelproto::websocket_format::v1;
    }
    bool takes_messages() const override { return true; }
    bool counts_as_connection() const override { return false; }
};

}  // namespace callisto::gateway::kernels
