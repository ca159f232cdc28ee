#include "gateway/e2b/process_stream.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/e2b/process_rpc.hpp"

namespace callisto::gateway::e2b {

process_stream::process_stream(boost::asio::io_context& ioc, std::shared_ptr<ndjson_stream> out,
                               std::chrono::milliseconds keepalive_every)
    : out_(std::move(out)),
      keepalive_(boost::asio::make_strand(ioc)),
      keepalive_every_(keepalive_every) {}

sandbox_process::listener process_stream::open(std::uint32_t pid) {
    out_->begin(http::status::ok, {}, "application/connect+json");
    out_->write_bytes(start_frame(pid));
    // A client gone needs no more keepalives; the command runs on.
    out_->watch_client([self = shared_from_this()] {
        boost::asio::post(self->keepalive_.get_executor(), [self] {
            self->done_ = true;
            self->keepalive_.cancel();
        });
    });
    boost::asio::post(keepalive_.get_executor(),
                      [self = shared_from_this()] { self->arm_keepalive(); });
    return [self = shared_from_this()](const process_event& e) { self->on_event(e); };
}

void process_stream::on_event(const process_event& event) {
    if (event.type == process_event::kind::output)
        return out_->write_bytes(data_frame(event.stream, event.bytes));
    for (auto& f : end_frames(event.exit)) out_->write_bytes(std::move(f));
    out_->end();
    // The timer is not thread-safe: cancelled from its own executor.
    boost::asio::post(keepalive_.get_executor(), [self = shared_from_this()] {
        self->done_ = true;
        self->keepalive_.cancel();
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
