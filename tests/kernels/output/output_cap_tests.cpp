#include "gateway/kernels/output/output_cap.hpp"
#include "gateway/kernels/output/output_cap_notice.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace callisto;
using gateway::kernels::output_cap;
using gateway::kernels::output_kind;
using action = output_cap::verdict::action;

namespace {
constexpr std::size_t stream_limit = 1000;
constexpr std::size_t rich_limit = 5000;
output_cap small_cap(std::size_t max_tracked = 256) {
    return output_cap({stream_limit, rich_limit}, max_tracked);
}
}  // namespace

TEST_CASE("classify_output: stream and the rich types are capped, everything else is not") {
    CHECK(gateway::kernels::classify_output("stream") == output_kind::stream);
    for (const char* rich : {"display_data", "update_display_data", "execute_result"})
        CHECK(gateway::kernels::classify_output(rich) == output_kind::rich);
    for (const char* other :
         {"status", "execute_input", "error", "clear_output", "comm_open", "comm_msg", "comm_close",
          "execute_reply", "", "Stream", "display_data_x", "some_future_type"})
        CHECK(gateway::kernels::classify_output(other) == output_kind::other);
}

TEST_CASE("output_cap passes output up to exactly the limit") {
    auto cap = small_cap();
    CHECK(cap.on_output("a", output_kind::stream, 400).what == action::pass);
    CHECK(cap.on_output("a", output_kind::stream, 600).what == action::pass);  // exactly 1000
    CHECK(cap.on_output("a", output_kind::stream, 0).what == action::pass);    // still at it
    CHECK(cap.on_idle("a").empty());  // nothing dropped, nothing to say
}

TEST_CASE("output_cap truncates the crossing stream message, announces once, then drops") {
    auto cap = small_cap();
    CHECK(cap.on_output("a", output_kind::stream, 900).what == action::pass);
    auto v = cap.on_output("a", output_kind::stream, 300);
    CHECK(v.what == action::truncate);
    CHECK(v.keep_bytes == 100);
    CHECK(v.announce);
    for (int i = 0; i < 3; ++i) {
        auto later = cap.on_output("a", output_kind::stream, 50);
        CHECK(later.what == action::drop);
        CHECK_FALSE(later.announce);
    }
    // Other message types of the execution still pass, and are not counted.
    CHECK(cap.on_output("a", output_kind::other, 1u << 30).what == action::pass);
    auto s = cap.on_idle("a");
    REQUIRE(s.size() == 1);
    CHECK(s[0].parent == "a");
    CHECK(s[0].stream.bytes == 200 + 150);
    CHECK(s[0].stream.messages == 4);
    CHECK(s[0].rich.messages == 0);
}

TEST_CASE("output_cap: a first message larger than the whole limit keeps the limit's worth") {
    auto cap = small_cap();
    auto v = cap.on_output("a", output_kind::stream, 50'000'000);
    CHECK(v.what == action::truncate);
    CHECK(v.keep_bytes == stream_limit);
    CHECK(v.announce);
    auto s = cap.on_idle("a");
    REQUIRE(s.size() == 1);
    CHECK(s[0].stream.bytes == 50'000'000 - stream_limit);
}

TEST_CASE("output_cap: when the budget is used up exactly, the next byte is dropped") {
    auto cap = small_cap();
    CHECK(cap.on_output("a", output_kind::stream, stream_limit).what == action::pass);
    auto v = cap.on_output("a", output_kind::stream, 1);
    CHECK(v.what == action::drop);  // no room left to keep any of it
    CHECK(v.announce);
}

TEST_CASE("output_cap drops rich output whole and keeps its own budget apart from stream") {
    auto cap = small_cap();
    CHECK(cap.on_output("a", output_kind::rich, 4000).what == action::pass);
    auto v = cap.on_output("a", output_kind::rich, 2000);
    CHECK(v.what == action::drop);  // an image is not cut in half
    CHECK(v.announce);
    CHECK(cap.on_output("a", output_kind::rich, 10).what == action::drop);
    // Smaller rich output after the cap is still dropped: the cell's output stays in order.
    CHECK(cap.on_output("a", output_kind::stream, 999).what == action::pass);
    auto s = cap.on_idle("a");
    REQUIRE(s.size() == 1);
    CHECK(s[0].rich.bytes == 2010);
    CHECK(s[0].rich.messages == 2);
    CHECK(s[0].stream.messages == 0);
}

TEST_CASE("output_cap: stream output that may not be cut is dropped whole") {
    auto cap = small_cap();
    auto v = cap.on_output("a", output_kind::stream, 1500, /*can_truncate=*/false);
    CHECK(v.what == action::drop);
    CHECK(v.announce);
}

TEST_CASE("output_cap: 0 means unlimited, per kind") {
    output_cap none({0, 0});
    CHECK_FALSE(none.enabled());
    CHECK(none.on_output("a", output_kind::stream, 1ull << 40).what == action::pass);
    CHECK(none.tracked() == 0);

    output_cap rich_only({0, 100});
    CHECK(rich_only.enabled());
    CHECK(rich_only.on_output("a", output_kind::stream, 1ull << 40).what == action::pass);
    CHECK(rich_only.on_output("a", output_kind::rich, 101).what == action::drop);
}

TEST_CASE("output_cap keeps interleaved executions apart") {
    auto cap = small_cap();
    CHECK(cap.on_output("a", output_kind::stream, 800).what == action::pass);
    CHECK(cap.on_output("b", output_kind::stream, 800).what == action::pass);
    CHECK(cap.on_output("a", output_kind::stream, 800).what == action::truncate);
    CHECK(cap.on_output("b", output_kind::stream, 200).what == action::pass);
    CHECK(cap.on_output("b", output_kind::stream, 1).what == action::drop);
    CHECK(cap.on_output("c", output_kind::stream, 1000).what == action::pass);

    auto sb = cap.on_idle("b");
    REQUIRE(sb.size() == 1);
    CHECK(sb[0].parent == "b");
    CHECK(sb[0].stream.bytes == 1);
    auto sa = cap.on_idle("a");
    REQUIRE(sa.size() == 1);
    CHECK(sa[0].stream.bytes == 600);
    CHECK(cap.on_idle("c").empty());
    CHECK(cap.on_idle("never-seen").empty());
}

TEST_CASE("output_cap summarises once; late output of a finished execution stays capped") {
    auto cap = small_cap();
    cap.on_output("a", output_kind::stream, 2000);
    CHECK(cap.on_idle("a").size() == 1);
    CHECK(cap.on_idle("a").empty());
    // A thread of the finished cell keeps printing with its parent: no new budget, no new
    // notice, and the next idle of that parent says what was lost since.
    auto late = cap.on_output("a", output_kind::stream, 10);
    CHECK(late.what == action::drop);
    CHECK_FALSE(late.announce);
    auto s = cap.on_idle("a");
    REQUIRE(s.size() == 1);
    CHECK(s[0].stream.bytes == 10);
}

TEST_CASE("output_cap: output without a parent has a budget renewed at each idle") {
    auto cap = small_cap();
    CHECK(cap.on_output("", output_kind::stream, 1000).what == action::pass);
    auto v = cap.on_output("", output_kind::stream, 10);
    CHECK(v.what == action::drop);
    CHECK(v.announce);
    auto s = cap.on_idle("a");  // any execution's end closes the parentless round
    REQUIRE(s.size() == 1);
    CHECK(s[0].parent.empty());
    CHECK(s[0].stream.bytes == 10);
    CHECK(cap.on_output("", output_kind::stream, 1000).what == action::pass);
    // An idle without a parent (odd, but possible) also closes it.
    cap.on_output("", output_kind::stream, 5);
    auto s2 = cap.on_idle("");
    REQUIRE(s2.size() == 1);
    CHECK(s2[0].stream.bytes == 5);
    CHECK(cap.on_output("", output_kind::stream, 1000).what == action::pass);
}

TEST_CASE("output_cap remembers a bounded number of executions, forgetting the least active") {
    auto cap = small_cap(/*max_tracked=*/2);
    cap.on_output("a", output_kind::stream, 1000);
    cap.on_output("b", output_kind::stream, 1000);
    cap.on_output("a", output_kind::stream, 0);  // a is now the most recent
    cap.on_output("c", output_kind::stream, 1000);
    CHECK(cap.tracked() == 2);
    CHECK(cap.on_output("a", output_kind::stream, 1).what == action::drop);  // still known
    CHECK(cap.on_output("b", output_kind::stream, 1).what == action::pass);  // forgotten: fresh
    for (int i = 0; i < 10000; ++i)
        cap.on_output("made-up-" + std::to_string(i), output_kind::stream, 1);
    CHECK(cap.tracked() == 2);
}

TEST_CASE("output_cap reset forgets every execution (kernel restart)") {
    auto cap = small_cap();
    cap.on_output("a", output_kind::stream, 5000);
    cap.reset();
    CHECK(cap.tracked() == 0);
    CHECK(cap.on_idle("a").empty());
    CHECK(cap.on_output("a", output_kind::stream, 1000).what == action::pass);
}

TEST_CASE("the notices are stderr stream messages addressed to the execution") {
    const std::string parent = R"({"msg_id":"exec-1","msg_type":"execute_request"})";
    gateway::kernels::output_limits limits{8u << 20, 64u << 20};
    auto notice =
        gateway::kernels::limit_reached_notice(output_kind::stream, limits, parent, "exec-1", "s");
    CHECK(notice.msg_type == "stream");
    CHECK(notice.parent_header == parent);
    CHECK(notice.parent_msg_id == "exec-1");
    auto content = nlohmann::json::parse(notice.content);
    CHECK(content["name"] == "stderr");
    const std::string text = content["text"];
    CHECK(text.find("output limit reached") != std::string::npos);
    CHECK(text.find("8 MiB") != std::string::npos);
    auto meta = nlohmann::json::parse(notice.metadata)["callisto_output_limit"];
    CHECK(meta["kind"] == "stream");
    CHECK(meta["limit"] == 8u << 20);

    output_cap::summary s{"exec-1", {12345678, 3}, {0, 0}};
    auto summary = gateway::kernels::dropped_output_summary(s, limits, parent, "exec-1", "s");
    CHECK(summary.parent_header == parent);
    const std::string stext = nlohmann::json::parse(summary.content)["text"];
    CHECK(stext.find("12345678 bytes") != std::string::npos);
    CHECK(stext.find("3 messages") != std::string::npos);
    CHECK(stext.find("rich") == std::string::npos);  // nothing rich was dropped
    auto smeta = nlohmann::json::parse(summary.metadata)["callisto_output_limit"];
    CHECK(smeta["dropped"]["stream"]["bytes"] == 12345678);
    CHECK_FALSE(smeta["dropped"].contains("rich"));

    // Without a parent header the notice carries an empty one.
    auto orphan = gateway::kernels::limit_reached_notice(output_kind::rich, limits, "", "", "s");
    CHECK(orphan.parent_header == "{}");
}

TEST_CASE("human_bytes") {
    CHECK(gateway::kernels::human_bytes(0) == "0 bytes");
    CHECK(gateway::kernels::human_bytes(1) == "1 byte");
    CHECK(gateway::kernels::human_bytes(1023) == "1023 bytes");
    CHECK(gateway::kernels::human_bytes(1024) == "1 KiB");
    CHECK(gateway::kernels::human_bytes(1536) == "1.5 KiB");
    CHECK(gateway::kernels::human_bytes(8u << 20) == "8 MiB");
    CHECK(gateway::kernels::human_bytes(3ull << 40) == "3 TiB");
}
