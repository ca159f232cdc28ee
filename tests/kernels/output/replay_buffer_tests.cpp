#include "gateway/kernels/output/replay_buffer.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace callisto;
using gateway::kernels::replay_buffer;

namespace {
std::shared_ptr<const kernelproto::message> output(std::uint64_t seq, std::size_t size = 100) {
    auto msg = kernelproto::make_message(
        "stream", {{"name", "stdout"}, {"text", std::string(size, 'x')}}, "s");
    gateway::kernels::stamp_sequence(msg, seq);
    return std::make_shared<const kernelproto::message>(std::move(msg));
}
}  // namespace

TEST_CASE("stamp_sequence adds callisto_seq to empty and non-empty metadata") {
    auto msg = kernelproto::make_message("status", {{"execution_state", "idle"}}, "s");
    gateway::kernels::stamp_sequence(msg, 7);
    CHECK(nlohmann::json::parse(msg.metadata) == nlohmann::json{{"callisto_seq", 7}});
    msg.metadata = R"( { "a": [1, {"b": 2}] } )";
    gateway::kernels::stamp_sequence(msg, 8);
    auto meta = nlohmann::json::parse(msg.metadata);
    CHECK(meta["callisto_seq"] == 8);
    CHECK(meta["a"][1]["b"] == 2);
    msg.metadata = "{ }";
    gateway::kernels::stamp_sequence(msg, 9);
    CHECK(nlohmann::json::parse(msg.metadata)["callisto_seq"] == 9);
}

TEST_CASE("replay returns what came after since, in order") {
    replay_buffer ring(1 << 20);
    for (std::uint64_t s = 1; s <= 5; ++s) ring.add(s, output(s));
    auto r = ring.since(2, 5);
    REQUIRE(r.messages.size() == 3);
    CHECK(r.messages[0].seq == 3);
    CHECK(r.messages[2].seq == 5);
    CHECK_FALSE(r.has_gap());
    CHECK(ring.since(5, 5).messages.empty());
    CHECK(ring.since(0, 5).messages.size() == 5);
}

TEST_CASE("replay stays within its byte bound and reports the gap it dropped") {
    replay_buffer ring(3 * 400);
    for (std::uint64_t s = 1; s <= 10; ++s) ring.add(s, output(s, 200));
    CHECK(ring.bytes() <= 3 * 400);
    auto r = ring.since(2, 10);
    REQUIRE(r.has_gap());
    CHECK(r.gap_from == 3);
    CHECK(r.gap_to == r.messages.front().seq - 1);
    CHECK(r.messages.back().seq == 10);
    // A client that is up to date sees no gap even though old entries were dropped.
    CHECK_FALSE(ring.since(9, 10).has_gap());
}

TEST_CASE("replay after clear reports everything as dropped") {
    replay_buffer ring(1 << 20);
    for (std::uint64_t s = 1; s <= 3; ++s) ring.add(s, output(s));
    ring.clear();
    auto r = ring.since(1, 3);
    CHECK(r.messages.empty());
    CHECK(r.gap_from == 2);
    CHECK(r.gap_to == 3);
}
