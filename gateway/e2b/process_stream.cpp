#include "gateway/e2b/process_stream.hpp"

#include "gateway/e2b/process_rpc.hpp"

namespace callisto::gateway::e2b {

process_stream::process_stream(boost::asio::io_context& ioc, std::shared_ptr<ndjson_stream> out,
                               std::chrono::milliseconds keepalive_every)
    : out_(std::move(out)),
      keepalive_(
          std::make_shared<stream_keepalive>(ioc, out_, keepalive_every, keepalive_frame())) {}

sandbox_process::listener process_stream::open(std::uint32_t pid) {
    out_->begin(http::status::ok, {}, "application/connect+json");
    out_->write_bytes(start_frame(pid));
    // A client gone needs no more keepalives; the command runs on.
    out_->watch_client([keepalive = keepalive_] { keepalive->stop(); });
    keepalive_->start();
    return [self = shared_from_this()](const process_event& e) { self->on_event(e); };
}

void process_stream::on_event(const process_event& event) {
    if (event.type == process_event::kind::output)
        return out_->write_bytes(data_frame(event.stream, event.bytes));
    for (auto& f : end_frames(event.exit)) out_->write_bytes(std::move(f));
    out_->end();
    keepalive_->stop();
}

}  // namespace callisto::gateway::e2b
