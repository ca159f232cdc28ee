// The reactor against an in-process fake kernel: real ZMQ sockets on ipc paths, no processes.

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelproto/wire_error.hpp"
#include "tests/transport/event_recorder.hpp"
#include "tests/transport/fake_kernel.hpp"
#include "tests/transport/test_support.hpp"
#include "transport/reactor.hpp"

namespace kp = callisto::kernelproto;
using callisto::log_level;
using callisto::logger;
using callisto::transport::link_id;
using callisto::transport::link_options;
using callisto::transport::reactor;
using callisto::transport::testing::event_recorder;
using callisto::transport::testing::eventually;
using callisto::transport::testing::fake_kernel;
using callisto::transport::testing::recorded_events;
using callisto::transport::testing::temp_dir;
using namespace std::chrono_literals;

namespace {

const std::string key = "8f1e5a0b2c3d4e5f60718293a4b5c6d7";

// Quiet by default; CALLISTO_TEST_LOG=1 shows what the reactor says.
logger test_logger() {
    return std::getenv("CALLISTO_TEST_LOG") ? logger::to_stderr(log_level::debug) : logger();
}

link_options fast_options() {
    link_options o;
    o.nudge_interval = 50ms;
    o.heartbeat_interval = 100ms;
    o.heartbeat_timeout = 1000ms;
    return o;
}

kp::message execute_request(const std::string& code, bool silent = false) {
    return kp::make_message("execute_request",
                            {{"code", code},
                             {"silent", silent},
                             {"store_history", !silent},
                             {"user_expressions", nlohmann::json::object()},
                             {"allow_stdin", true},
                             {"stop_on_error", true}},
                            "test-session", "tester");
}

std::string stream_text(const kp::message& msg) {
    return nlohmann::json::parse(msg.content).value("text", "");
}

bool connected(const recorded_events& e) { return e.connected == 1; }

// A fake kernel, a reactor, and a recorder for the events of a link between them; members are
// declared in the order the tests tear them down (recorder, reactor, kernel, directory).
struct kernel_and_reactor {
    temp_dir dir;
    fake_kernel kernel{dir.path().string() + "/k", key};
    reactor r{test_logger()};
    std::shared_ptr<event_recorder> events = std::make_shared<event_recorder>();
};

// A reactor link to the fake kernel that has finished connecting.
struct connected_link : kernel_and_reactor {
    link_id id = r.open(kernel.info(), events, fast_options());

    connected_link() { REQUIRE(events->wait_for(connected)); }
};

}  // namespace

TEST_CASE_FIXTURE(kernel_and_reactor,
                  "open() names the link to its listener before the reactor reports anything") {
    // The kernel session tags what it posts with this id; a fast kernel's first reports used to
    // arrive before open() had returned it, and a connection was taken for a stale link's.
    const link_id id = r.open(kernel.info(), events, fast_options());
    REQUIRE(events->wait_for(connected));
    const auto seen = events->snapshot();
    CHECK(seen.opened_as == id);
    CHECK(seen.reports_before_open == 0);
}

TEST_CASE_FIXTURE(
    kernel_and_reactor,
    "a kernel that answers before the iopub subscription reaches it is nudged again soon") {
    // A nudge interval far longer than the wait below: only the quick retries can connect it.
    kernel.unpublished_kernel_infos = 3;
    link_options options = fast_options();
    options.nudge_interval = std::chrono::minutes(10);
    r.open(kernel.info(), events, options);
    REQUIRE(events->wait_for(connected));
    CHECK(kernel.kernel_info_requests() >= 4);
}

TEST_CASE_FIXTURE(kernel_and_reactor,
                  "a link is connected only after a kernel_info_reply and an iopub message") {
    SUBCASE("replies without iopub are not enough") {
        kernel.publish_status = false;
        link_id id = r.open(kernel.info(), events, fast_options());
        REQUIRE(eventually([&] { return kernel.kernel_info_requests() >= 3; }));
        // Our own request's reply comes after the nudges' replies on the same socket, so once
        // it is reported the reactor has seen those too.
        kp::message own = kp::make_message("kernel_info_request", nlohmann::json::object(), "s");
        r.send(id, kp::channel::shell, own);
        REQUIRE(events->wait_for([&](const recorded_events& e) {
            return e.count(kp::channel::shell, "kernel_info_reply", own.msg_id) == 1;
        }));
        CHECK(events->with([](const recorded_events& e) { return e.connected; }) == 0);

        kernel.publish_status = true;
        CHECK(events->wait_for(connected));
    }

    SUBCASE("iopub without a reply is not enough") {
        kernel.answer_kernel_info = false;
        r.open(kernel.info(), events, fast_options());
        REQUIRE(events->wait_for(
            [](const recorded_events& e) { return e.count(kp::channel::iopub, "status") >= 6; }));
        CHECK(events->with([](const recorded_events& e) { return e.connected; }) == 0);

        kernel.answer_kernel_info = true;
        CHECK(events->wait_for(connected));
    }

    // Exactly once, and nothing that looks like a nudge reply leaked.
    auto e = events->snapshot();
    CHECK(e.connected == 1);
    CHECK(e.threads.size() == 1);
}

TEST_CASE_FIXTURE(connected_link,
                  "replies to the nudges are swallowed while their iopub status is reported") {
    // A client's own kernel_info_request is not a nudge: its reply is reported.
    kp::message own = kp::make_message("kernel_info_request", nlohmann::json::object(), "s");
    r.send(id, kp::channel::shell, own);
    REQUIRE(events->wait_for([&](const recorded_events& e) {
        return e.count(kp::channel::shell, "kernel_info_reply", own.msg_id) == 1;
    }));
    int requests_seen = kernel.kernel_info_requests();
    // Connected: nudging has stopped, so no further kernel_info_request reaches the kernel.
    std::this_thread::sleep_for(300ms);
    CHECK(kernel.kernel_info_requests() == requests_seen);

    auto e = events->snapshot();
    CHECK(e.count(kp::channel::shell, "kernel_info_reply") == 1);
    CHECK(e.messages.size() > 1);
    int nudge_statuses = 0;
    for (const auto& [ch, msg] : e.messages) {
        if (ch == kp::channel::iopub && msg.msg_type == "status" && msg.parent_msg_id != own.msg_id)
            ++nudge_statuses;
    }
    CHECK(nudge_statuses >= 1);
}

TEST_CASE_FIXTURE(
    connected_link,
    "an execute_request round trip reports the stream and the reply with their parent") {
    kp::message req = execute_request("hello");
    r.send(id, kp::channel::shell, req);
    REQUIRE(events->wait_for([&](const recorded_events& e) {
        return e.count(kp::channel::shell, "execute_reply", req.msg_id) == 1 &&
               e.count(kp::channel::iopub, "status", req.msg_id) == 2;
    }));
    auto e = events->snapshot();
    REQUIRE(e.count(kp::channel::iopub, "stream", req.msg_id) == 1);
    for (const auto& [ch, msg] : e.messages) {
        if (msg.msg_type == "stream") CHECK(stream_text(msg) == "hello");
        if (msg.msg_type == "execute_reply") {
            CHECK(nlohmann::json::parse(msg.content).at("status") == "ok");
            CHECK(msg.session != req.session);  // the kernel's session, not ours
        }
    }
    auto s = r.stats();
    CHECK(s.messages_out >= 2);  // at least one nudge and the request
    CHECK(s.messages_in >= 4);
    CHECK(s.bytes_in > 0);
    CHECK(s.links == 1);
    CHECK(s.bad_messages == 0);
}

TEST_CASE_FIXTURE(kernel_and_reactor,
                  "input_request reaches stdin on the routing id shared with shell") {
    link_options options = fast_options();
    options.session_id = "session-for-routing";
    link_id id = r.open(kernel.info(), events, options);
    REQUIRE(events->wait_for(connected));

    kp::message req = execute_request("input:name?");
    r.send(id, kp::channel::shell, req);
    REQUIRE(events->wait_for([&](const recorded_events& e) {
        return e.count(kp::channel::stdin_, "input_request", req.msg_id) == 1;
    }));
    for (const auto& identity : kernel.shell_identities()) CHECK(identity == "session-for-routing");

    kp::message input_request;
    events->with([&](const recorded_events& e) {
        for (const auto& [ch, msg] : e.messages)
            if (msg.msg_type == "input_request") input_request = msg;
        return 0;
    });
    CHECK(nlohmann::json::parse(input_request.content).at("prompt") == "name?");
    r.send(id, kp::channel::stdin_,
           kp::make_message("input_reply", {{"value", "callisto"}}, "test-session", "tester",
                            &input_request));
    // The reply (shell) and the stream (iopub) travel on different sockets: wait for both.
    CHECK(events->wait_for([&](const recorded_events& e) {
        bool got = false;
        for (const auto& [ch, msg] : e.messages)
            if (msg.msg_type == "stream" && stream_text(msg) == "got:callisto") got = true;
        return got && e.count(kp::channel::shell, "execute_reply", req.msg_id) == 1;
    }));
}

TEST_CASE_FIXTURE(connected_link,
                  "a badly signed message is counted and reported, and the link keeps working") {
    kernel.publish_badly_signed();
    REQUIRE(events->wait_for([](const recorded_events& e) { return e.bad.size() == 1; }));
    auto [ch, ec] = events->with([](const recorded_events& e) { return e.bad.front(); });
    CHECK(ch == kp::channel::iopub);
    CHECK(ec == kp::wire_error::bad_signature);
    CHECK(r.stats().bad_messages == 1);

    kp::message req = execute_request("still here");
    r.send(id, kp::channel::shell, req);
    REQUIRE(events->wait_for([&](const recorded_events& e) {
        return e.count(kp::channel::shell, "execute_reply", req.msg_id) == 1;
    }));
    // The bad message (a stream "x") never reached on_message.
    auto e = events->snapshot();
    for (const auto& [c, msg] : e.messages) {
        if (msg.msg_type == "stream") CHECK(stream_text(msg) == "still here");
    }
}

TEST_CASE_FIXTURE(kernel_and_reactor, "a missed heartbeat is reported once and its recovery once") {
    link_options options = fast_options();
    options.heartbeat_interval = 50ms;
    options.heartbeat_timeout = 300ms;
    r.open(kernel.info(), events, options);
    REQUIRE(events->wait_for(connected));

    kernel.answer_heartbeat = false;
    REQUIRE(events->wait_for([](const recorded_events& e) { return !e.heartbeats.empty(); }));
    // Several timeouts pass while the kernel is silent; still one report.
    std::this_thread::sleep_for(1s);
    CHECK(events->with([](const recorded_events& e) { return e.heartbeats; }) ==
          std::vector<bool>{false});

    kernel.answer_heartbeat = true;
    REQUIRE(events->wait_for([](const recorded_events& e) { return e.heartbeats.size() == 2; }));
    std::this_thread::sleep_for(300ms);
    CHECK(events->with([](const recorded_events& e) { return e.heartbeats; }) ==
          std::vector<bool>{false, true});
}

TEST_CASE("close() stops events for the link and leaves the others running") {
    temp_dir dir;
    fake_kernel kernel(dir.path().string() + "/k", key);
    reactor r(test_logger());
    auto closed_events = std::make_shared<event_recorder>();
    auto open_events = std::make_shared<event_recorder>();
    link_id closing = r.open(kernel.info(), closed_events, fast_options());
    link_id staying = r.open(kernel.info(), open_events, fast_options());
    REQUIRE(closed_events->wait_for(connected));
    REQUIRE(open_events->wait_for(connected));

    r.close(closing);
    // Commands run in order: once this request's reply is back, the close has been done.
    kp::message sync = execute_request("sync");
    r.send(staying, kp::channel::shell, sync);
    r.send(closing, kp::channel::shell, execute_request("ignored"));
    REQUIRE(open_events->wait_for([&](const recorded_events& e) {
        return e.count(kp::channel::shell, "execute_reply", sync.msg_id) == 1;
    }));
    std::size_t closed_total =
        closed_events->with([](const recorded_events& e) { return e.total(); });

    // The kernel publishes to every subscriber it has; the closed link has none left.
    kp::message req = execute_request("burst:100");
    r.send(staying, kp::channel::shell, req);
    REQUIRE(open_events->wait_for([&](const recorded_events& e) {
        return e.count(kp::channel::shell, "execute_reply", req.msg_id) == 1 &&
               e.count(kp::channel::iopub, "stream", req.msg_id) == 100;
    }));
    CHECK(closed_events->with([](const recorded_events& e) { return e.total(); }) == closed_total);
    CHECK(kernel.execute_requests() == 2);
    CHECK(eventually([&] { return r.stats().links == 1; }));
    r.stop();
    // The reactor let go of the handler.
    CHECK(closed_events.use_count() == 1);
}

TEST_CASE("close() from inside an event handler silences the link at once") {
    temp_dir dir;
    fake_kernel kernel(dir.path().string() + "/k", key);
    reactor r(test_logger());

    // Closes its own link on the first message, from the reactor thread.
    struct closing_recorder : event_recorder {
        reactor* owner = nullptr;
        std::atomic<link_id> id{0};
        void on_message(kp::channel ch, kp::message msg) override {
            event_recorder::on_message(ch, std::move(msg));
            owner->close(id.load());
        }
    };
    auto closing = std::make_shared<closing_recorder>();
    closing->owner = &r;
    // The kernel stays silent until the handler knows its link id.
    kernel.publish_status = false;
    kernel.answer_kernel_info = false;
    closing->id = r.open(kernel.info(), closing, fast_options());
    kernel.publish_status = true;
    kernel.answer_kernel_info = true;

    // A second link as a barrier: once it is connected and has a reply, the first link's
    // sockets have long seen the same iopub traffic.
    auto other = std::make_shared<event_recorder>();
    link_id other_id = r.open(kernel.info(), other, fast_options());
    REQUIRE(other->wait_for(connected));
    kp::message req = execute_request("burst:50");
    r.send(other_id, kp::channel::shell, req);
    REQUIRE(other->wait_for([&](const recorded_events& e) {
        return e.count(kp::channel::iopub, "status", req.msg_id) == 2;
    }));

    auto e = closing->snapshot();
    CHECK(e.messages.size() == 1);  // the message during which it closed, nothing after
    CHECK(e.connected == 0);
    CHECK(eventually([&] { return r.stats().links == 1; }));
}

TEST_CASE("one reactor serves 100 links") {
    temp_dir dir;
    std::vector<std::unique_ptr<fake_kernel>> kernels;
    for (int k = 0; k < 4; ++k)
        kernels.push_back(
            std::make_unique<fake_kernel>(dir.path().string() + "/k" + std::to_string(k), key));
    reactor r(test_logger());
    std::vector<std::shared_ptr<event_recorder>> events;
    std::vector<link_id> ids;
    for (int i = 0; i < 100; ++i) {
        events.push_back(std::make_shared<event_recorder>());
        ids.push_back(r.open(kernels[static_cast<std::size_t>(i % 4)]->info(), events.back(),
                             fast_options()));
    }
    for (auto& e : events) REQUIRE(e->wait_for(connected));
    CHECK(r.stats().links == 100);

    std::vector<kp::message> requests;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        requests.push_back(execute_request("link " + std::to_string(i)));
        r.send(ids[i], kp::channel::shell, requests.back());
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        REQUIRE(events[i]->wait_for([&](const recorded_events& e) {
            return e.count(kp::channel::shell, "execute_reply", requests[i].msg_id) == 1 &&
                   e.count(kp::channel::iopub, "stream", requests[i].msg_id) == 1;
        }));
        // Replies go only to the link that asked.
        CHECK(events[i]->with([](const recorded_events& e) {
            return e.count(kp::channel::shell, "execute_reply");
        }) == 1);
    }
    for (auto id : ids) r.close(id);
    CHECK(eventually([&] { return r.stats().links == 0; }));
}

// Closed sockets give their fds back and new ones take the same numbers: a watch that outlived
// its socket would leave the new one unheard, or refuse to be added.
TEST_CASE("links opened after others closed, 60 rounds, each connect and answer") {
    temp_dir dir;
    fake_kernel kernel(dir.path().string() + "/k", key);
    reactor r(test_logger());
    for (int round = 0; round < 60; ++round) {
        CAPTURE(round);
        auto events = std::make_shared<event_recorder>();
        link_id id = r.open(kernel.info(), events, fast_options());
        REQUIRE(events->wait_for(connected));
        kp::message req = execute_request("round " + std::to_string(round));
        r.send(id, kp::channel::shell, req);
        REQUIRE(events->wait_for([&](const recorded_events& e) {
            return e.count(kp::channel::shell, "execute_reply", req.msg_id) == 1;
        }));
        r.close(id);
    }
    CHECK(eventually([&] { return r.stats().links == 0; }));
    CHECK(r.stats().zmq_errors == 0);
}

TEST_CASE_FIXTURE(connected_link,
                  "a burst of 20000 iopub messages is delivered complete and in order") {
    constexpr int burst = 20000;
    kp::message req = execute_request("burst:" + std::to_string(burst));
    r.send(id, kp::channel::shell, req);
    REQUIRE(events->wait_for(
        [&](const recorded_events& e) {
            return e.count(kp::channel::iopub, "stream", req.msg_id) == burst &&
                   e.count(kp::channel::iopub, "status", req.msg_id) == 2;
        },
        std::chrono::seconds(120)));
    auto e = events->snapshot();
    int expected = 0;
    for (const auto& [ch, msg] : e.messages) {
        if (msg.msg_type != "stream") continue;
        if (stream_text(msg) != std::to_string(expected)) {
            FAIL("stream out of order at " << expected << ": " << stream_text(msg));
        }
        ++expected;
    }
    CHECK(expected == burst);
}

TEST_CASE("requests sent before the kernel listens are all delivered, in order") {
    temp_dir dir;
    std::string prefix = dir.path().string() + "/k";
    reactor r(test_logger());
    auto events = std::make_shared<event_recorder>();
    link_id id = r.open(fake_kernel::info_for(prefix, key), events, fast_options());

    // More than the DEALER's send HWM (1000): the rest wait in the reactor, not dropped.
    constexpr int count = 3000;
    std::vector<std::string> ids;
    for (int i = 0; i < count; ++i) {
        kp::message req = execute_request(std::to_string(i), /*silent=*/true);
        ids.push_back(req.msg_id);
        r.send(id, kp::channel::shell, std::move(req));
    }
    std::this_thread::sleep_for(200ms);
    fake_kernel kernel(prefix, key);
    REQUIRE(events->wait_for(
        [&](const recorded_events& e) {
            return e.count(kp::channel::shell, "execute_reply") == count;
        },
        std::chrono::seconds(60)));
    auto e = events->snapshot();
    std::size_t next = 0;
    for (const auto& [ch, msg] : e.messages) {
        if (msg.msg_type != "execute_reply") continue;
        REQUIRE(msg.parent_msg_id == ids[next]);
        ++next;
    }
    CHECK(r.stats().sends_dropped == 0);
    CHECK(events->wait_for(connected));
}

TEST_CASE("stop() is idempotent, joins, and later calls are ignored") {
    temp_dir dir;
    fake_kernel kernel(dir.path().string() + "/k", key);
    auto r = std::make_unique<reactor>(test_logger());
    auto events = std::make_shared<event_recorder>();
    link_id id = r->open(kernel.info(), events, fast_options());
    REQUIRE(events->wait_for(connected));

    r->stop();
    r->stop();
    CHECK(events.use_count() == 1);  // the joined thread dropped its reference
    CHECK(r->stats().links == 0);
    std::size_t total = events->with([](const recorded_events& e) { return e.total(); });

    auto late = std::make_shared<event_recorder>();
    link_id late_id = r->open(kernel.info(), late, fast_options());
    CHECK(late_id != id);
    r->send(id, kp::channel::shell, execute_request("after stop"));
    r->close(id);
    std::this_thread::sleep_for(200ms);
    CHECK(late->with([](const recorded_events& e) { return e.total(); }) == 0);
    CHECK(events->with([](const recorded_events& e) { return e.total(); }) == total);
    CHECK(kernel.execute_requests() == 0);
    r.reset();  // the destructor stops again
}

TEST_CASE_FIXTURE(connected_link, "a 3 MB output arrives intact through the kept-frame path") {
    // Echoed as one stream message: its content frame is kept as ZeroMQ received it and
    // validated alongside the signature check.
    std::string code;
    for (int i = 0; code.size() < (3u << 20); ++i) code += "line " + std::to_string(i) + " é\n";
    kp::message req = execute_request(code);
    r.send(id, kp::channel::shell, req);
    // Shell and iopub are separate sockets with no order between them (and a big iopub
    // content is validated on a helper thread): wait for both the reply and the output.
    REQUIRE(events->wait_for([&](const recorded_events& e) {
        return e.count(kp::channel::shell, "execute_reply", req.msg_id) == 1 &&
               e.count(kp::channel::iopub, "stream", req.msg_id) >= 1;
    }));
    auto e = events->snapshot();
    bool seen = false;
    for (const auto& [c, msg] : e.messages) {
        if (msg.msg_type != "stream" || msg.parent_msg_id != req.msg_id) continue;
        seen = true;
        CHECK(msg.content.is_view());
        CHECK(stream_text(msg) == code);
    }
    CHECK(seen);
    CHECK(r.stats().bad_messages == 0);
}

namespace {

// A fake kernel and a link to it whose parts may weigh 1 MiB at most.
struct limited_link {
    temp_dir dir;
    std::optional<fake_kernel> kernel{std::in_place, dir.path().string() + "/k", key};
    reactor r{test_logger()};
    std::shared_ptr<event_recorder> events = std::make_shared<event_recorder>();
    link_id id = r.open(kernel->info(), events, [] {
        auto o = fast_options();
        o.max_part_bytes = 1u << 20;
        return o;
    }());

    limited_link() { REQUIRE(events->wait_for(connected)); }
};

}  // namespace

TEST_CASE_FIXTURE(limited_link,
                  "a message part over the limit drops its connection; the link makes a new one "
                  "and says which channel lost a message") {
    // ZeroMQ drops the 2 MB error on iopub and the 2 MB reply on shell, and each connection
    // with it; it would not connect either again by itself.
    kp::message big = execute_request("raise:2000000");
    r.send(id, kp::channel::shell, big);
    REQUIRE(events->wait_for([](const recorded_events& e) { return e.dropped.size() == 2; }));
    auto e = events->snapshot();
    CHECK(e.count(kp::channel::shell, "execute_reply", big.msg_id) == 0);
    CHECK(e.count(kp::channel::iopub, "error", big.msg_id) == 0);
    std::set<kp::channel> dropped(e.dropped.begin(), e.dropped.end());
    CHECK(dropped == std::set<kp::channel>{kp::channel::shell, kp::channel::iopub});
    CHECK(r.stats().connections_dropped == 2);

    // Both channels work again. The first request is answered at once; its output may go out
    // before the new subscription reaches the kernel (ZeroMQ's slow joiner), so ask again
    // until a stream arrives.
    kp::message first = execute_request("hello");
    r.send(id, kp::channel::shell, first);
    REQUIRE(events->wait_for([&](const recorded_events& x) {
        return x.count(kp::channel::shell, "execute_reply", first.msg_id) == 1;
    }));
    bool output = false;
    for (int i = 0; i < 50 && !output; ++i) {
        kp::message next = execute_request("hello");
        r.send(id, kp::channel::shell, next);
        output = events->wait_for(
            [&](const recorded_events& x) {
                return x.count(kp::channel::iopub, "stream", next.msg_id) == 1;
            },
            std::chrono::seconds(1));
    }
    CHECK(output);
    // What fits still passes.
    kp::message small = execute_request("raise:1000");
    r.send(id, kp::channel::shell, small);
    REQUIRE(events->wait_for([&](const recorded_events& x) {
        return x.count(kp::channel::shell, "execute_reply", small.msg_id) == 1 &&
               x.count(kp::channel::iopub, "error", small.msg_id) == 1;
    }));
    CHECK(events->snapshot().dropped.size() == 2);
}

TEST_CASE_FIXTURE(limited_link, "a kernel that closes its sockets has dropped no message") {
    // Its connections end too, but ZeroMQ tries them again: nothing was refused.
    kernel.reset();
    std::this_thread::sleep_for(1500ms);
    CHECK(events->snapshot().dropped.empty());
    CHECK(r.stats().connections_dropped == 0);
}
