#include "gateway/interpreter/kernel_reset.hpp"

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "kernelproto/ids.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway::interpreter {

namespace asio = boost::asio;

kernelproto::message make_reset_request(const std::string& workdir, bool wipe,
                                        const std::string& session) {
    std::string code =
        "import sys as _callisto_sys\n"
        "if 'matplotlib.pyplot' in _callisto_sys.modules:\n"
        "    _callisto_sys.modules['matplotlib.pyplot'].close('all')\n";
    code +=
        "import os as _callisto_os, shutil as _callisto_shutil\n"
        "_callisto_os.chdir(" +
        nlohmann::json(workdir).dump() + ")\n";
    if (wipe) {
        code +=
            "for _callisto_e in list(_callisto_os.scandir('.')):\n"
            "    if _callisto_e.name in ('.ipython', '.cache'):\n"
            "        continue\n"
            "    try:\n"
            "        if _callisto_e.is_dir(follow_symlinks=False):\n"
            "            _callisto_shutil.rmtree(_callisto_e.path)\n"
            "        else:\n"
            "            _callisto_os.unlink(_callisto_e.path)\n"
            "    except OSError:\n"
            "        pass\n";
    }
    // A new history session, so the execution count may start at 1 again without clashing
    // with the lines of the previous one in IPython's history database.
    code += "get_ipython().reset(new_session=True, aggressive=False)\n";
    return kernelproto::make_message("execute_request",
                                     {{"code", code},
                                      {"silent", true},
                                      {"store_history", false},
                                      {"user_expressions", nlohmann::json::object()},
                                      {"allow_stdin", false},
                                      {"stop_on_error", false}},
                                     session);
}

kernel_reset::kernel_reset(asio::io_context& ioc, std::function<void(bool)> done)
    : strand_(asio::make_strand(ioc)), timer_(strand_), done_(std::move(done)) {}

void kernel_reset::run(asio::io_context& ioc,
                       const std::shared_ptr<kernels::kernel_session>& kernel,
                       const std::string& workdir, bool wipe, std::chrono::milliseconds timeout,
                       std::function<void(bool ok)> done) {
    auto self = std::make_shared<kernel_reset>(ioc, std::move(done));
    self->kernel_ = kernel;
    // Attached (as no connection) so that a kernel shut down meanwhile, by a limit or the
    // server stopping, ends the wait at once instead of at the timeout.
    kernel->attach(self);
    auto request = make_reset_request(workdir, wipe, kernelproto::new_uuid());
    self->msg_id_ = request.msg_id;
    asio::post(self->strand_, [self, timeout] {
        self->timer_.expires_after(timeout);
        self->timer_.async_wait([self](boost::system::error_code ec) {
            if (!ec) self->finish(false);
        });
    });
    kernel->submit(self, kernelproto::channel::shell, std::move(request));
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
