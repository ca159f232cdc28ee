// kernel_link's sockets against a kernel's own sockets, bound by the test: no reactor, so that
// the order of what closes when is the test's.

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include <zmq.hpp>

#include "kernelproto/connection_info.hpp"
#include "tests/transport/fake_kernel.hpp"
#include "tests/transport/test_support.hpp"
#include "transport/detail/kernel_link.hpp"

namespace kp = callisto::kernelproto;
using callisto::transport::detail::kernel_link;
using callisto::transport::testing::fake_kernel;
using callisto::transport::testing::temp_dir;

namespace {

// What a kernel binds, as ipykernel does, on its own context; closed at once when destroyed.
struct bound_kernel {
    zmq::context_t ctx;
    zmq::socket_t shell, control, stdin_, iopub, hb;

    explicit bound_kernel(const kp::connection_info& info) {
        shell = bind(zmq::socket_type::router, info.endpoint(kp::channel::shell));
        control = bind(zmq::socket_type::router, info.endpoint(kp::channel::control));
        stdin_ = bind(zmq::socket_type::router, info.endpoint(kp::channel::stdin_));
        iopub = bind(zmq::socket_type::pub, info.endpoint(kp::channel::iopub));
        hb = bind(zmq::socket_type::rep, info.heartbeat_endpoint());
    }
    zmq::socket_t bind(zmq::socket_type type, const std::string& endpoint) {
        zmq::socket_t s(ctx, type);
        s.set(zmq::sockopt::linger, 0);
        s.bind(endpoint);
        return s;
    }
};

// Whether ZeroMQ's I/O thread of `ctx` still carries a message: one DEALER of `ctx` to a
// ROUTER elsewhere. A blocked I/O thread never delivers it (waited for generously).
bool io_thread_serves(zmq::context_t& ctx, const std::string& endpoint) {
    zmq::context_t other;
    zmq::socket_t router(other, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::rcvtimeo, 10000);
    router.bind(endpoint);
    zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(endpoint);
    dealer.send(zmq::str_buffer("ping"), zmq::send_flags::none);
    zmq::message_t identity;
    return router.recv(identity).has_value();
}

}  // namespace

TEST_CASE("a link closed just before its kernel exits leaves ZeroMQ's I/O thread serving") {
    // Each channel socket has a monitor, which the I/O thread writes to with a blocking send.
    // The link used to close the monitor's reader before the socket: the exiting kernel's
    // disconnection, seen while the socket was still being torn down, was then an event with
    // no reader, the I/O thread shared by every kernel blocked for good, and the gateway's other
    // kernels went silent (missed heartbeats, no kernel_info_reply). It took about one close
    // in three; 30 rounds.
    temp_dir dir;
    zmq::context_t ctx;
    for (int round = 0; round < 30; ++round) {
        CAPTURE(round);
        const auto info =
            fake_kernel::info_for(dir.path().string() + "/k" + std::to_string(round), "key");
        auto kernel = std::make_unique<bound_kernel>(info);
        auto link = std::make_unique<kernel_link>();
        link->id = static_cast<callisto::transport::link_id>(round + 1);
        link->info = info;
        link->session = "session";
        link->connect(ctx);
        // Connected to the kernel: one round trip on shell.
        link->sockets[0].send(zmq::str_buffer("hello"), zmq::send_flags::none);
        zmq::message_t identity;
        kernel->shell.set(zmq::sockopt::rcvtimeo, 10000);
        REQUIRE(kernel->shell.recv(identity).has_value());

        link.reset();    // the gateway closes the link ...
        kernel.reset();  // ... and the kernel exits (a kill, a shutdown)
        REQUIRE(io_thread_serves(
            ctx, "ipc://" + dir.path().string() + "/probe" + std::to_string(round)));
    }
}

TEST_CASE("a link that fails closes its sockets and monitors, and the I/O thread serves on") {
    temp_dir dir;
    zmq::context_t ctx;
    for (int round = 0; round < 10; ++round) {
        CAPTURE(round);
        const auto info =
            fake_kernel::info_for(dir.path().string() + "/k" + std::to_string(round), "key");
        auto kernel = std::make_unique<bound_kernel>(info);
        kernel_link link;
        link.id = static_cast<callisto::transport::link_id>(round + 1);
        link.info = info;
        link.session = "session";
        link.connect(ctx);
        link.fail();
        kernel.reset();
        CHECK(link.failed);
        for (auto& s : link.sockets) CHECK_FALSE(s);
        for (auto& m : link.monitors) CHECK_FALSE(m);
        REQUIRE(io_thread_serves(
            ctx, "ipc://" + dir.path().string() + "/probe" + std::to_string(round)));
    }
}
