#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/kernels/session/heartbeat_watch.hpp"

using callisto::gateway::kernels::heartbeat_watch;
using namespace std::chrono_literals;

namespace {

struct watched {
    std::shared_ptr<int> owner = std::make_shared<int>(0);  // the session, in the server
    boost::asio::io_context ioc;
    std::vector<std::chrono::seconds> frozen;
    heartbeat_watch watch;

    explicit watched(std::chrono::seconds timeout)
        : watch(boost::asio::make_strand(ioc), timeout,
                [this](std::chrono::seconds silent) { frozen.push_back(silent); }) {}

    // Runs what is due; long enough for a 1 s timeout to pass, with room for a slow machine.
    void run_past_timeout() { ioc.run_for(3s); }
};

}  // namespace

TEST_CASE("a heartbeat missing past the timeout reports the kernel frozen, once") {
    watched w(1s);
    w.watch.missed(w.owner);
    w.watch.missed(w.owner);  // later misses of the same silence change nothing
    w.run_past_timeout();
    REQUIRE(w.frozen.size() == 1);
    CHECK(w.frozen[0] >= 1s);
}

TEST_CASE("a heartbeat answered again before the timeout reports nothing") {
    watched w(1s);
    w.watch.missed(w.owner);
    const auto silence = w.watch.answered();
    REQUIRE(silence.has_value());
    w.run_past_timeout();
    CHECK(w.frozen.empty());
    CHECK_FALSE(w.watch.answered().has_value());  // no silence to end
}

TEST_CASE("a stopped watch or a zero timeout never reports") {
    watched stopped(1s);
    stopped.watch.missed(stopped.owner);
    stopped.watch.stop();
    stopped.run_past_timeout();
    CHECK(stopped.frozen.empty());

    watched never(0s);
    never.watch.missed(never.owner);
    never.ioc.run_for(200ms);
    CHECK(never.frozen.empty());
    CHECK(never.watch.answered().has_value());  // the silence is still measured
}

TEST_CASE("an excused silence is counted again from the excuse and judged a timeout later") {
    boost::asio::io_context ioc;
    std::vector<std::chrono::seconds> frozen;
    auto owner = std::make_shared<int>(0);
    heartbeat_watch* self = nullptr;
    heartbeat_watch watch(boost::asio::make_strand(ioc), 1s, [&](std::chrono::seconds silent) {
        frozen.push_back(silent);
        if (frozen.size() == 1) self->excuse();  // busy, say: not yet
    });
    self = &watch;
    watch.missed(owner);
    ioc.run_for(5s);  // both judgements, with room for a slow machine
    REQUIRE(frozen.size() == 2);
    CHECK(frozen[1] >= 1s);
}

TEST_CASE("a watch whose owner is gone reports nothing") {
    watched w(1s);
    w.watch.missed(w.owner);
    w.owner.reset();
    w.run_past_timeout();
    CHECK(w.frozen.empty());
}
