#pragma once
// The answer to a client frame Callisto refuses: an iopub "error" message (ename
// CallistoProtocolError) addressed to the client's request when its header could be read, so
// both a person and a program see why, and the connection stays usable.

#include <string_view>

#include "kernelproto/message.hpp"

namespace callisto::gateway::jupyter_api {

kernelproto::message protocol_error_message(std::string_view reason,
                                            const kernelproto::message* rejected);

}  // namespace callisto::gateway::jupyter_api
