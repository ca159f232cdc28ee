#pragma once
// Which messages from a Jupyter client make a kernel run code, and what code: the audit log
// records each one, and refuses it when it cannot be recorded, whatever the channel or field
// the code travels in. Pure, so every form is unit-tested.
//
//   execute_request on shell  its `code`, and its `user_expressions`, which the kernel
//                             evaluates after the code
//                             (refused when its code holds a NUL: ipykernel never answers it)
//   execute_request elsewhere refused: ipykernel runs one sent on control too, but no client
//                             sends it there, and it would bypass the shell's queue
//   debug_request             `evaluate`, `setExpression` and `setVariable` evaluate code in
//                             the debugged process (JupyterLab's debugger sends them on control)
//
// inspect_request and complete_request evaluate no code of the client's (they may call
// attribute getters of objects earlier code defined, which that code's audit line covers).

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kernelproto/channel.hpp"

namespace callisto::gateway::kernels {

struct code_request {
    std::string kind;                 // "execute_request", "debug_request evaluate", ...
    std::string code;                 // what the kernel is asked to evaluate
    nlohmann::json user_expressions;  // execute_request's, when it has any (else null)
};

struct code_request_verdict {
    std::optional<code_request> runs;  // the message makes the kernel run this
    std::string refused;               // not "": the message is refused, and why
};

// Whether a message of this type may carry code; only those are parsed.
bool may_run_code(std::string_view msg_type);

// `content` is the message's parsed content (any JSON, as a client sent it).
code_request_verdict classify_code_request(kernelproto::channel ch, std::string_view msg_type,
                                           const nlohmann::json& content);

}  // namespace callisto::gateway::kernels
