#pragma once
// The messages clients see when an output cap cuts an execution short: ordinary iopub stderr
// stream messages addressed to the execution (its parent header), so every Jupyter frontend
// shows them in the cell, with metadata.callisto_output_limit for programs.

#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/kernels/output/output_cap.hpp"
#include "kernelproto/message.hpp"

namespace callisto::gateway::kernels {

// "8 MiB", "1.5 KiB", "512 bytes".
std::string human_bytes(std::size_t bytes);

// Said once, right after the last output shown. parent_header: the execution's, as raw JSON.
kernelproto::message limit_reached_notice(output_kind kind, const output_limits& limits,
                                          std::string_view parent_header,
                                          std::string_view parent_msg_id, std::string_view session);

// Said when the kernel sent output faster than the gateway could pass it on and some was
// dropped (gateway/kernels/output/message_budget.hpp): before the next message that got through.
kernelproto::message flood_dropped_notice(std::uint64_t messages, std::uint64_t bytes,
                                          std::size_t budget, std::string_view parent_header,
                                          std::string_view parent_msg_id, std::string_view session);

// Said when the execution goes idle: how much was not shown.
kernelproto::message dropped_output_summary(const output_cap::summary& summary,
                                            const output_limits& limits,
                                            std::string_view parent_header,
                                            std::string_view parent_msg_id,
                                            std::string_view session);

}  // namespace callisto::gateway::kernels
