#include "gateway/e2b/stream_keepalive.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

namespace callisto::gateway::e2b {

stream_keepalive::stream_keepalive(boost::asio::io_context& ioc, std::shared_ptr<ndjson_stream> out,
                                   std::chrono::milliseconds every, std::string frame)
    : timer_(boost::asio::make_strand(ioc)),
      out_(std::move(out)),
      every_(every),
      frame_(std::move(frame)) {}

void stream_keepalive::start() {
    boost::asio::post(timer_.get_executor(), [self = shared_from_this()] { self->arm(); });
}

void stream_keepalive::stop() {
    // The timer is not thread-safe: cancelled from its own executor.
    boost::asio::post(timer_.get_executor(), [self = shared_from_this()] {
        self->done_ = true;
        self->timer_.cancel();
    });
}

void stream_keepalive::arm() {
    if (done_) return;
    timer_.expires_after(every_);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->done_) return;
        self->out_->write_bytes(self->frame_);
        self->arm();
    });
}

}  // namespace callisto::gateway::e2b
