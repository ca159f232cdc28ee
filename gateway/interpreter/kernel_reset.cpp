#include "gateway/interpreter/kernel_reset.hpp"

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "gateway/interpreter/gateway_execute_request.hpp"
#include "kernelproto/ids.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::interpreter {

namespace asio = boost::asio;

std::optional<kernelproto::message> make_reset_request(languages::kernel_dialect dialect,
                                                       const std::string& workdir, bool wipe,
                                                       const std::string& session) {
    auto code = languages::reset_code(dialect, workdir, wipe);
    if (!code) return std::nullopt;
    return gateway_execute_request(std::move(*code),
                                   languages::silent_requests_report_errors(dialect),
                                   /*store_history=*/false, session);
}

kernel_reset::kernel_reset(asio::io_context& ioc, std::function<void(bool)> done)
    : strand_(asio::make_strand(ioc)), timer_(strand_), done_(std::move(done)) {}

void kernel_reset::run(asio::io_context& ioc,
                       const std::shared_ptr<kernels::kernel_session>& kernel,
                       languages::kernel_dialect dialect, const std::string& workdir, bool wipe,
                       std::chrono::milliseconds timeout, std::function<void(bool ok)> done) {
    auto request = make_reset_request(dialect, workdir, wipe, kernelproto::new_uuid());
    if (!request) return done(false);  // a kernel the gateway cannot reset is not kept
    auto self = std::make_shared<kernel_reset>(ioc, std::move(done));
    self->kernel_ = kernel;
    // Attached (as no connection) so that a kernel shut down meanwhile, by a limit or the
    // server stopping, ends the wait at once instead of at the timeout.
    kernel->attach(self);
    self->msg_id_ = request->msg_id;
    asio::post(self->strand_, [self, timeout] {
        self->timer_.expires_after(timeout);
        self->timer_.async_wait([self](boost::system::error_code ec) {
            if (!ec) self->finish(false);
        });
    });
    kernel->submit(self, kernelproto::channel::shell, std::move(*request));
}

void kernel_reset::deliver_message(kernelproto::channel ch,
                                   std::shared_ptr<const kernelproto::message> msg) {
    if (ch != kernelproto::channel::shell || msg->msg_type != "execute_reply" ||
        msg->parent_msg_id != msg_id_)
        return;
    auto content = kernelproto::parse_untrusted_json(msg->content).value;
    const bool ok = content.is_object() && content.value("status", "") == "ok";
    asio::post(strand_, [self = shared_from_this(), ok] { self->finish(ok); });
}

void kernel_reset::finish(bool ok) {
    if (!strand_.running_in_this_thread())
        return asio::post(strand_, [self = shared_from_this(), ok] { self->finish(ok); });
    timer_.cancel();
    if (!done_) return;
    kernel_->detach(this);
    auto done = std::move(done_);
    done_ = nullptr;
    done(ok);
}

}  // namespace callisto::gateway::interpreter
