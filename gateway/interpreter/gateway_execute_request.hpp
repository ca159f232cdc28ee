#pragma once
// An execute_request the interpreter sends a kernel: a user's execution, or the gateway's own
// code (change directory, set the environment, reset a kept kernel).

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kernelproto/message.hpp"

namespace callisto::gateway::interpreter {

// Never asks for input (no one would answer), and never stops on an error: one request at a
// time reaches the kernel, so there is no queue for stop_on_error to abort; with it, ipykernel
// aborts the NEXT request when it arrives before the abort window closes (a race after every
// error or interrupt), the env restore included.
inline kernelproto::message gateway_execute_request(std::string code, bool silent,
                                                    bool store_history, std::string_view session) {
    return kernelproto::make_message("execute_request",
                                     {{"code", std::move(code)},
                                      {"silent", silent},
                                      {"store_history", store_history},
                                      {"user_expressions", nlohmann::json::object()},
                                      {"allow_stdin", false},
                                      {"stop_on_error", false}},
                                     session);
}

}  // namespace callisto::gateway::interpreter
