#pragma once
// What a client may send on the events WebSocket (GET /v1/contexts/{id}/events), parsed and
// checked. Pure, so every bad form is unit-tested.
//
//   {"type": "execute", "code": ..., <the other fields of POST .../executions>}
//   {"type": "follow", "execution_id": ...}      the events of an execution, from its start
//   {"type": "interrupt", "execution_id": ...}
// Each may carry "request_id" (1-128 printable ASCII), echoed in the answer to it, so a client
// with several requests in flight can tell which was queued or refused.

#include <optional>
#include <string>
#include <string_view>

#include "gateway/interpreter/execution_request.hpp"

namespace callisto::gateway::interpreter {

struct events_command {
    enum class kind { execute, follow, interrupt };
    kind type = kind::execute;
    std::string request_id;     // "" when none
    execution_request request;  // execute
    std::string execution_id;   // follow, interrupt
};

// On error returns nullopt and a sentence in `error`; `request_id` is set whenever the message
// carried a valid one, so the error can name it.
std::optional<events_command> parse_events_command(std::string_view text,
                                                   const execution_request_limits& limits,
                                                   std::string& error, std::string& request_id);

}  // namespace callisto::gateway::interpreter
