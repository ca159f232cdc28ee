#pragma once
// One process.Process/Start answer: Connect's stream (application/connect+json) of the bash
// execution that runs the command: its start frame at once, then its output and end as they
// happen (process_rpc.hpp), a keepalive frame while it runs quietly, and the execution
// interrupted (the shell runner stops the command's process group) when the client goes
// before the end (the SDK's command timeout, kill, an aborted request).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/interpreter/execution.hpp"
#include "gateway/interpreter/ndjson_stream.hpp"

namespace callisto::gateway::e2b {

class process_stream : public std::enable_shared_from_this<process_stream> {
public:
    process_stream(boost::asio::io_context& ioc, std::shared_ptr<interpreter::ndjson_stream> out,
                   std::chrono::milliseconds keepalive_every);

    void follow(const std::shared_ptr<interpreter::execution>& exec, std::uint32_t pid,
                std::function<void()> interrupt);

private:
    void arm_keepalive();

    std::shared_ptr<interpreter::ndjson_stream> out_;
    boost::asio::steady_timer keepalive_;  // on a strand of its own
    bool done_ = false;                    // that strand's
    const std::chrono::milliseconds keepalive_every_;
};

}  // namespace callisto::gateway::e2b
