#pragma once
// A keepalive on a streamed answer (/execute's NDJSON, Connect's process and watch streams):
// the same bytes every `every` while the answer runs, so that the client and the proxies between
// do not take a quiet command or execution for a dead connection.

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/http/ndjson_stream.hpp"

namespace callisto::gateway::e2b {

class stream_keepalive : public std::enable_shared_from_this<stream_keepalive> {
public:
    // `frame`: the keepalive as it is written, its framing included.
    stream_keepalive(boost::asio::io_context& ioc, std::shared_ptr<ndjson_stream> out,
                     std::chrono::milliseconds every, std::string frame);

    // Both may be called from any thread: the timer keeps to a strand of its own.
    void start();
    void stop();  // no keepalive is written after it has run

private:
    void arm();

    boost::asio::steady_timer timer_;
    std::shared_ptr<ndjson_stream> out_;
    const std::chrono::milliseconds every_;
    const std::string frame_;
    bool done_ = false;  // the timer's strand
};

}  // namespace callisto::gateway::e2b
