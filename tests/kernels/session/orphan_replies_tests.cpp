#include "gateway/kernels/session/orphan_replies.hpp"

#include <doctest/doctest.h>

#include "kernelproto/message.hpp"
#include "tests/kernels/kernel_fakes.hpp"

using namespace callisto::gateway::kernels;
using callisto::gateway::kernels::test::websocket_client;
namespace kp = callisto::kernelproto;
using kp::channel;

namespace {

// A kernel's reply to a request the client of `session` sent (to an earlier gateway).
kp::message reply_to(const std::string& session, std::string padding = {}) {
    auto request = kp::make_message("execute_request", {{"code", "1"}}, session);
    auto reply = kp::make_message("execute_reply", {{"status", "ok"}, {"pad", padding}},
                                  "kernel-session", "kernel", &request);
    REQUIRE(kp::parse_routing_fields(reply));
    return reply;
}

}  // namespace

TEST_CASE("a reply waits for its session's client, and goes to it when it shows up") {
    orphan_replies orphans("gateway-session");
    const auto reply = reply_to("lab-session");
    CHECK_FALSE(orphans.arrived(channel::shell, reply));
    CHECK(orphans.waiting() == 1);

    auto other = std::make_shared<websocket_client>();
    CHECK(orphans.client_seen(other, "another-session").empty());
    CHECK(orphans.waiting() == 1);

    auto client = std::make_shared<websocket_client>();
    auto due = orphans.client_seen(client, "lab-session");
    REQUIRE(due.size() == 1);
    CHECK(due[0].channel == channel::shell);
    CHECK(due[0].message.msg_id == reply.msg_id);
    CHECK(orphans.waiting() == 0);
    CHECK(orphans.client_seen(client, "lab-session").empty());  // delivered once
}

TEST_CASE("a reply for a session already seen goes straight to its client") {
    orphan_replies orphans("gateway-session");
    auto client = std::make_shared<websocket_client>();
    CHECK(orphans.client_seen(client, "lab-session").empty());
    auto d = orphans.arrived(channel::control, reply_to("lab-session"));
    REQUIRE(d);
    CHECK(d->client == client);
    CHECK(d->what.channel == channel::control);

    // Once the client is gone, the next reply waits again.
    orphans.client_gone(client.get());
    CHECK_FALSE(orphans.arrived(channel::shell, reply_to("lab-session")));
    CHECK(orphans.waiting() == 1);
}

TEST_CASE("a client that expired is not delivered to") {
    orphan_replies orphans("gateway-session");
    {
        auto client = std::make_shared<websocket_client>();
        orphans.client_seen(client, "lab-session");
    }
    CHECK_FALSE(orphans.arrived(channel::shell, reply_to("lab-session")));
    CHECK(orphans.waiting() == 1);
}

TEST_CASE("replies to the gateway's own requests, or with no session, are nobody's") {
    orphan_replies orphans("gateway-session");
    auto client = std::make_shared<websocket_client>();
    orphans.client_seen(client, "gateway-session");
    CHECK_FALSE(orphans.arrived(channel::shell, reply_to("gateway-session")));
    CHECK_FALSE(orphans.arrived(channel::shell, reply_to("")));
    auto malformed = reply_to("lab-session");
    malformed.parent_header = "not json";
    CHECK_FALSE(orphans.arrived(channel::shell, malformed));
    CHECK(orphans.waiting() == 0);
    CHECK(orphans.client_seen(client, "").empty());
}

TEST_CASE("what waits is bounded in count and bytes, the oldest dropped first") {
    orphan_replies orphans("gateway-session", 3, 10'000);
    std::vector<std::string> ids;
    for (int i = 0; i < 5; ++i) {
        auto r = reply_to("lab-session");
        ids.push_back(r.msg_id);
        orphans.arrived(channel::shell, std::move(r));
    }
    CHECK(orphans.waiting() == 3);
    auto client = std::make_shared<websocket_client>();
    auto due = orphans.client_seen(client, "lab-session");
    REQUIRE(due.size() == 3);
    CHECK(due[0].message.msg_id == ids[2]);
    CHECK(due[2].message.msg_id == ids[4]);

    // A reply larger than the whole budget is not kept; big ones push older ones out.
    orphans.client_gone(client.get());
    CHECK_FALSE(orphans.arrived(channel::shell, reply_to("s", std::string(20'000, 'x'))));
    CHECK(orphans.waiting() == 0);
    orphans.arrived(channel::shell, reply_to("s", std::string(4'000, 'x')));
    orphans.arrived(channel::shell, reply_to("s", std::string(4'000, 'x')));
    orphans.arrived(channel::shell, reply_to("s", std::string(4'000, 'x')));
    CHECK(orphans.waiting() == 2);
}

TEST_CASE("header_session and parent_session read the session of either header") {
    auto request = kp::make_message("kernel_info_request", {}, "lab-session");
    auto reply = kp::make_message("kernel_info_reply", {}, "kernel-session", "k", &request);
    CHECK(header_session(request) == "lab-session");
    CHECK(parent_session(request).empty());
    CHECK(header_session(reply) == "kernel-session");
    CHECK(parent_session(reply) == "lab-session");
    request.header = R"({"session": 5})";
    CHECK(header_session(request).empty());
}
