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

// A kernel bound in `dir` (numbered `round`, as each round of a test starts one), and the
// gateway's link to it, its sockets connected on `ctx`.
struct linked_kernel {
    std::unique_ptr<bound_kernel> kernel;
    std::unique_ptr<kernel_link> link = std::make_unique<kernel_link>();

    linked_kernel(zmq::context_t& ctx, const temp_dir& dir, int round) {
        const auto info =
            fake_kernel::info_for(dir.path().string() + "/k" + std::to_string(round), "key");
        kernel = std::make_unique<bound_kernel>(info);
        link->id = static_cast<callisto::transport::link_id>(round + 1);
        link->info = info;
        link->session = "session";
        link->connect(ctx);
    }
};

// `rounds` rounds on one ZeroMQ context, each a kernel and a link to it that `round_of` does
// something with, and a check that the context's I/O thread still serves after it.
template <class Round>
void rounds_on_one_context(int rounds, Round round_of) {
    temp_dir dir;
    zmq::context_t ctx;
    for (int round = 0; round < rounds; ++round) {
        CAPTURE(round);
        linked_kernel k(ctx, dir, round);
        round_of(k);
        REQUIRE(io_thread_serves(
            ctx, "ipc://" + dir.path().string() + "/probe" + std::to_string(round)));
    }
}

}  // namespace

TEST_CASE("a link closed just before its kernel exits leaves ZeroMQ's I/O thread serving") {
    // Each channel socket has a monitor, which the I/O thread writes to with a blocking send.
    // The link used to close the monitor's reader before the socket: the exiting kernel's
    // disconnection, seen while the socket was still being torn down, was then an event with
    // no reader, the I/O thread shared by every kernel blocked for good, and the gateway's other
    // kernels went silent (missed heartbeats, no kernel_info_reply). It took about one close
    // in three; 30 rounds.
    rounds_on_one_context(30, [](linked_kernel& k) {
        // Connected to the kernel: one round trip on shell.
        k.link->sockets[0].send(zmq::str_buffer("hello"), zmq::send_flags::none);
        zmq::message_t identity;
        k.kernel->shell.set(zmq::sockopt::rcvtimeo, 10000);
        REQUIRE(k.kernel->shell.recv(identity).has_value());

        k.link.reset();    // the gateway closes the link ...
        k.kernel.reset();  // ... and the kernel exits (a kill, a shutdown)
    });
}

TEST_CASE("a link that fails closes its sockets and monitors, and the I/O thread serves on") {
    rounds_on_one_context(10, [](linked_kernel& k) {
        k.link->fail();
        k.kernel.reset();
        CHECK(k.link->failed);
        for (auto& s : k.link->sockets) CHECK_FALSE(s);
        for (auto& m : k.link->monitors) CHECK_FALSE(m);
    });
}
