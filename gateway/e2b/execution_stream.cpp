#include "gateway/e2b/execution_stream.hpp"

#include "gateway/e2b/execution_lines.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

namespace callisto::gateway::e2b {

execution_stream::execution_stream(boost::asio::io_context& ioc, std::shared_ptr<ndjson_stream> out,
                                   std::chrono::milliseconds keepalive_every)
    : out_(std::move(out)),
      keepalive_(boost::asio::make_strand(ioc)),
      keepalive_every_(keepalive_every) {}

void execution_stream::follow(const std::shared_ptr<interpreter::execution>& exec,
                              std::function<void()> interrupt) {
    // The headers at once: the SDK's request timeout runs until they arrive.
    out_->begin(http::status::ok);
    out_->watch_client(std::move(interrupt));
    boost::asio::post(keepalive_.get_executor(),
                      [self = shared_from_this()] { self->arm_keepalive(); });
    exec->subscribe([self = shared_from_this()](const nlohmann::json& event, bool last) {
        for (auto& line : execution_lines(event)) self->out_->write_line(std::move(line));
        if (!last) return;
        self->out_->end();
        // The timer is not thread-safe: cancelled from its own executor.
        boost::asio::post(self->keepalive_.get_executor(), [self] {
            self->done_ = true;
            self->keepalive_.cancel();
        });
    });
}

void execution_stream::arm_keepalive() {
    if (done_) return;
    keepalive_.expires_after(keepalive_every_);
    keepalive_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->done_) return;
        self->out_->write_line(keepalive_line());
        self->arm_keepalive();
    });
}

}  // namespace callisto::gateway::e2b
