#pragma once
// Resets a kernel before it is kept for its owner's next context, in the kernel's language
// (languages/python_dialect.cpp, r_dialect.cpp): closes figures, empties the workdir (the
// kernel does it, as the sandbox's user, so nothing it planted can redirect the deletion),
// changes into it, and clears the namespace. It runs after the kernel was renewed (a new
// process in a new sandbox: kernel_session::renew), which is what makes the next context as
// clean as a fresh kernel; the reset checks that the new process runs code, and is what
// cleans a kernel without a sandbox (--sandbox=off).
//
// The kernel is offered to anyone only once the reset has answered: files uploaded for the
// next context must not be wiped by a reset still queued in front of its first execution.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/kernels/session/in_process_client.hpp"
#include "gateway/kernels/session/kernel_session.hpp"
#include "gateway/languages/kernel_dialect.hpp"
#include "kernelproto/message.hpp"

namespace callisto::gateway::interpreter {

// The kernel changes into `workdir` (as it sees it) before the reset, which needs a current
// directory that exists; with `wipe` it empties it first. Unsandboxed kernels leave their
// context's own directory, which the gateway removes, for a directory that stays.
// In the kernel's own language; nullopt for a dialect the gateway cannot reset.
std::optional<kernelproto::message> make_reset_request(languages::kernel_dialect dialect,
                                                       const std::string& workdir, bool wipe,
                                                       const std::string& session);

class kernel_reset : public kernels::in_process_client,
                     public std::enable_shared_from_this<kernel_reset> {
public:
    // done(true) once the kernel answered the reset with "ok"; done(false) on an error reply
    // or no answer within `timeout`. Runs on the kernel's or a timer's thread.
    static void run(boost::asio::io_context& ioc,
                    const std::shared_ptr<kernels::kernel_session>& kernel,
                    languages::kernel_dialect dialect, const std::string& workdir, bool wipe,
                    std::chrono::milliseconds timeout, std::function<void(bool ok)> done);

    kernel_reset(boost::asio::io_context& ioc, std::function<void(bool)> done);

    void deliver_message(kernelproto::channel ch,
                         std::shared_ptr<const kernelproto::message> msg) override;
    void deliver(std::shared_ptr<const kernelproto::websocket_frame>) override {}
    void close_from_kernel(std::string) override { finish(false); }

private:
    void finish(bool ok);

    std::shared_ptr<kernels::kernel_session>
        kernel_;  // attached until finish(): its shutdown ends the wait
    boost::asio::strand<boost::asio::io_context::executor_type> strand_;
    boost::asio::steady_timer timer_;
    std::string msg_id_;
    std::function<void(bool)> done_;  // strand; empty once called
};

}  // namespace callisto::gateway::interpreter
