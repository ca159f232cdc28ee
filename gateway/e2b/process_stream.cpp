#include "gateway/e2b/process_stream.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/e2b/process_rpc.hpp"

namespace callisto::gateway::e2b {

process_stream::process_stream(boost::asio::io_context& ioc,
                               std::shared_ptr<interpreter::ndjson_stream> out,
                               std::chrono::milliseconds keepalive_every)
    : out_(std::move(out)),
      keepalive_(boost::asio::make_strand(ioc)),
      keepalive_every_(keepalive_every) {}

void process_stream::follow(const std::shared_ptr<interpreter::execution>& exec, std::uint32_t pid,
                            std::function<void()> interrupt) {
    // The headers and the start event at once: the SDK waits for the start to return.
    out_->begin(http::status::ok, {}, "application/connect+json");
    out_->write_bytes(start_frame(pid));
    out_->watch_client(std::move(interrupt));
    boost::asio::post(keepalive_.get_executor(),
                      [self = shared_from_this()] { self->arm_keepalive(); });
    exec->subscribe([self = shared_from_this()](const nlohmann::json& event, bool last) {
        for (auto& f : process_frames(event)) self->out_->write_bytes(std::move(f));
        if (!last) return;
        // A stream without its end frame fails in the client: give one whatever ended it.
        if (event.value("type", "") != "end")
            for (auto& f : process_frames({{"type", "end"}, {"execution", {{"status", "error"}}}}))
                self->out_->write_bytes(std::move(f));
        self->out_->end();
        // The timer is not thread-safe: cancelled from its own executor.
        boost::asio::post(self->keepalive_.get_executor(), [self] {
            self->done_ = true;
            self->keepalive_.cancel();
        });
    });
}

void process_stream::arm_keepalive() {
    if (done_) return;
    keepalive_.expires_after(keepalive_every_);
    keepalive_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->done_) return;
        self->out_->write_bytes(keepalive_frame());
        self->arm_keepalive();
    });
}

}  // namespace callisto::gateway::e2b
