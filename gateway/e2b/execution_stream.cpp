#include "gateway/e2b/execution_stream.hpp"

#include "gateway/e2b/execution_lines.hpp"

namespace callisto::gateway::e2b {

execution_stream::execution_stream(boost::asio::io_context& ioc, std::shared_ptr<ndjson_stream> out,
                                   std::chrono::milliseconds keepalive_every)
    : out_(std::move(out)),
      // A line of its own (write_line's newline, written whole).
      keepalive_(std::make_shared<stream_keepalive>(ioc, out_, keepalive_every,
                                                    keepalive_line() + "\n")) {}

void execution_stream::follow(const std::shared_ptr<interpreter::execution>& exec,
                              std::function<void()> interrupt) {
    // The headers at once: the SDK's request timeout runs until they arrive.
    out_->begin(http::status::ok);
    out_->watch_client(std::move(interrupt));
    keepalive_->start();
    exec->subscribe([self = shared_from_this()](const nlohmann::json& event, bool last) {
        for (auto& line : execution_lines(event)) self->out_->write_line(std::move(line));
        if (!last) return;
        self->out_->end();
        self->keepalive_->stop();
    });
}

}  // namespace callisto::gateway::e2b
