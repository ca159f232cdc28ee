#pragma once
// One process.Process/Start or Connect answer: Connect's stream (application/connect+json) of
// a command running in the sandbox (sandbox_process.hpp): the start frame with its pid, then
// its output and end as they happen (process_rpc.hpp), a keepalive frame while it is quiet. A
// client that goes leaves the command running, as envd does (the SDK's disconnect(), a
// background command's handle); the sandbox's end, or a kill, stops it.

#include <chrono>
#include <cstdint>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "gateway/e2b/sandbox_process.hpp"
#include "gateway/e2b/stream_keepalive.hpp"
#include "gateway/http/ndjson_stream.hpp"

namespace callisto::gateway::e2b {

class process_stream : public std::enable_shared_from_this<process_stream> {
public:
    process_stream(boost::asio::io_context& ioc, std::shared_ptr<ndjson_stream> out,
                   std::chrono::milliseconds keepalive_every);

    // The headers and the start frame at once (the SDK waits for the start); the listener
    // returned writes every later event.
    sandbox_process::listener open(std::uint32_t pid);

private:
    void on_event(const process_event& event);

    std::shared_ptr<ndjson_stream> out_;
    std::shared_ptr<stream_keepalive> keepalive_;
};

}  // namespace callisto::gateway::e2b
