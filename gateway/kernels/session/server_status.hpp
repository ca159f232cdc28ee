#pragma once
// The iopub status messages the gateway makes itself ("restarting", "dead"), with an empty
// parent header as jupyter_server's. The cause of a kernel's death (an OOM kill, a crash) rides
// along in the metadata as "callisto_reason" (metadata is free-form in the protocol, so other
// clients ignore it), so that an execution the death ended can say why.

#include <string>
#include <string_view>

#include "kernelproto/message.hpp"

namespace callisto::gateway::kernels {

kernelproto::message make_server_status(std::string_view execution_state, std::string_view session,
                                        const std::string& reason = {});

// The reason a status message carries; "" when it has none.
std::string server_status_reason(const kernelproto::message& msg);

}  // namespace callisto::gateway::kernels
