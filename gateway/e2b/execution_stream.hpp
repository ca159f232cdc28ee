#pragma once
// One /execute answer: an interpreter execution's events written as E2B's NDJSON lines as they
// happen, a keepalive line while the code runs quietly, and the execution interrupted (the
// context's interrupt ladder) when the client goes before the end.

#include <chrono>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "gateway/e2b/stream_keepalive.hpp"
#include "gateway/http/ndjson_stream.hpp"
#include "gateway/interpreter/execution.hpp"

namespace callisto::gateway::e2b {

class execution_stream : public std::enable_shared_from_this<execution_stream> {
public:
    execution_stream(boost::asio::io_context& ioc, std::shared_ptr<ndjson_stream> out,
                     std::chrono::milliseconds keepalive_every);

    // Begins the 200 answer and follows `exec` to its end; `interrupt` is called when the
    // client leaves first.
    void follow(const std::shared_ptr<interpreter::execution>& exec,
                std::function<void()> interrupt);

private:
    std::shared_ptr<ndjson_stream> out_;
    std::shared_ptr<stream_keepalive> keepalive_;
};

}  // namespace callisto::gateway::e2b
