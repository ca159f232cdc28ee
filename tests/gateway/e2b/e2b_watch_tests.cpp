// envd's filesystem.Filesystem/WatchDir for the E2B facade (gateway/e2b/watch_rpc): the
// request's every bad form, inotify masks as envd's event types, and the stream's messages in
// Connect's envelopes; the polling watchers' requests and their table (watcher_table).

#include <sys/inotify.h>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gateway/e2b/connect_envelope.hpp"
#include "gateway/e2b/watch_rpc.hpp"
#include "gateway/e2b/watcher_table.hpp"

using namespace callisto::gateway::e2b;
using nlohmann::json;

namespace {

json message_of(const std::string& frame) {
    std::error_code ec;
    auto frames = decode_envelopes(frame, 1 << 20, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(frames.size() == 1);
    CHECK_FALSE(frames[0].end());
    return json::parse(frames[0].payload);
}

}  // namespace

TEST_CASE("WatchDir: a path of the home, recursive or not") {
    connect_code code = connect_code::internal;
    std::string error;
    auto home = parse_watch_dir(R"({"path": "/home/user"})", code, error);
    REQUIRE(home);
    CHECK(home->path.empty());
    CHECK_FALSE(home->recursive);
    auto sub = parse_watch_dir(
        R"({"path": "/home/user/a/b", "recursive": true, "includeEntry": false,
            "allowNetworkMounts": false})",
        code, error);
    REQUIRE(sub);
    CHECK(sub->path == "a/b");
    CHECK(sub->recursive);
}

TEST_CASE("WatchDir refuses every bad request with Connect's codes") {
    struct bad {
        const char* body;
        connect_code code;
    };
    for (const auto& c : std::vector<bad>{
             {"", connect_code::invalid_argument},
             {"{", connect_code::invalid_argument},
             {"[]", connect_code::invalid_argument},
             {"{}", connect_code::invalid_argument},
             {R"({"path": 3})", connect_code::invalid_argument},
             {R"({"path": ""})", connect_code::invalid_argument},
             {R"({"path": "/etc"})", connect_code::permission_denied},
             {R"({"path": "../.."})", connect_code::permission_denied},
             {R"({"path": "/home/user", "recursive": "yes"})", connect_code::invalid_argument},
             {R"({"path": "/home/user", "includeEntry": 1})", connect_code::invalid_argument},
             {R"({"path": "/home/user", "includeEntry": true})", connect_code::unimplemented},
         }) {
        INFO(c.body);
        connect_code code = connect_code::internal;
        std::string error;
        CHECK_FALSE(parse_watch_dir(c.body, code, error));
        CHECK(code == c.code);
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("inotify masks become envd's event types, as fsnotify maps them") {
    using v = std::vector<std::string>;
    CHECK(event_types_of(IN_CREATE) == v{"EVENT_TYPE_CREATE"});
    CHECK(event_types_of(IN_CREATE | IN_ISDIR) == v{"EVENT_TYPE_CREATE"});
    CHECK(event_types_of(IN_MOVED_TO) == v{"EVENT_TYPE_CREATE"});
    CHECK(event_types_of(IN_MODIFY) == v{"EVENT_TYPE_WRITE"});
    CHECK(event_types_of(IN_DELETE) == v{"EVENT_TYPE_REMOVE"});
    CHECK(event_types_of(IN_MOVED_FROM) == v{"EVENT_TYPE_RENAME"});
    CHECK(event_types_of(IN_ATTRIB) == v{"EVENT_TYPE_CHMOD"});
    CHECK(event_types_of(IN_CREATE | IN_ATTRIB) == v{"EVENT_TYPE_CREATE", "EVENT_TYPE_CHMOD"});
    CHECK(event_types_of(IN_OPEN).empty());
    CHECK(event_types_of(IN_CLOSE_WRITE).empty());
    CHECK(event_types_of(IN_IGNORED).empty());
}

TEST_CASE("WatchDir's stream: start, filesystem events, keepalive") {
    CHECK(message_of(watch_start_frame()) == json{{"start", json::object()}});
    CHECK(message_of(watch_event_frame("a/b.txt", "EVENT_TYPE_WRITE")) ==
          json{{"filesystem", {{"name", "a/b.txt"}, {"type", "EVENT_TYPE_WRITE"}}}});
    CHECK(message_of(watch_keepalive_frame()) == json{{"keepalive", json::object()}});
}

TEST_CASE("polling watchers: {watcherId} and its bad forms; the events message") {
    connect_code code = connect_code::internal;
    std::string error;
    auto id = parse_watcher_id(R"({"watcherId": "w-1"})", code, error);
    REQUIRE(id);
    CHECK(*id == "w-1");
    for (const char* bad : {"", "[]", "{}", R"({"watcherId": 3})", R"({"watcherId": ""})",
                            R"({"watcherId": null})", "{\"watcherId\": \"w"}) {
        CAPTURE(bad);
        code = connect_code::internal;
        CHECK_FALSE(parse_watcher_id(bad, code, error));
        CHECK(code == connect_code::invalid_argument);
        CHECK(error.find("watcherId") != std::string::npos);
    }
    CHECK(watcher_events_message({}) == json{{"events", json::array()}});
    CHECK(watcher_events_message({{"a.txt", "EVENT_TYPE_CREATE"}, {"d/b", "EVENT_TYPE_WRITE"}}) ==
          json::parse(R"({"events": [{"name": "a.txt", "type": "EVENT_TYPE_CREATE"},
                                     {"name": "d/b", "type": "EVENT_TYPE_WRITE"}]})"));
}

TEST_CASE("watcher_table: events kept until polled, per sandbox, bounded, stopped on removal") {
    watcher_table table;
    int stopped = 0;
    auto a = table.add("sbx-a", [&] { ++stopped; });
    auto b = table.add("sbx-b", [&] { ++stopped; });
    REQUIRE(a);
    REQUIRE(b);
    CHECK(*a != *b);
    table.push(*a, {"x", "EVENT_TYPE_CREATE"});
    table.push(*a, {"x", "EVENT_TYPE_WRITE"});
    table.push("no-such-watcher", {"y", "EVENT_TYPE_CREATE"});  // ignored

    SUBCASE("a poll takes what came since the last one") {
        auto first = table.take("sbx-a", *a);
        REQUIRE(first);
        REQUIRE(first->events.size() == 2);
        CHECK(first->events[1].type == "EVENT_TYPE_WRITE");
        CHECK(first->dropped == 0);
        auto second = table.take("sbx-a", *a);
        REQUIRE(second);
        CHECK(second->events.empty());
        CHECK(table.take("sbx-b", *b)->events.empty());
    }
    SUBCASE("another sandbox's watcher is not found, whatever its id") {
        CHECK_FALSE(table.take("sbx-b", *a));
        CHECK_FALSE(table.remove("sbx-b", *a));
        CHECK(stopped == 0);
        CHECK(table.take("sbx-a", *a)->events.size() == 2);
    }
    SUBCASE("removed: stopped once, then unknown") {
        CHECK(table.remove("sbx-a", *a));
        CHECK(stopped == 1);
        CHECK_FALSE(table.take("sbx-a", *a));
        CHECK_FALSE(table.remove("sbx-a", *a));
        CHECK(stopped == 1);
        CHECK(table.count("sbx-b") == 1);
    }
    SUBCASE("a sandbox that goes stops all its watchers, and only them") {
        auto a2 = table.add("sbx-a", [&] { ++stopped; });
        REQUIRE(a2);
        table.remove_sandbox("sbx-a");
        CHECK(stopped == 2);
        CHECK(table.count("sbx-a") == 0);
        CHECK(table.count("sbx-b") == 1);
    }
    SUBCASE("past max_events the oldest go, and the poll counts them") {
        for (std::size_t i = 0; i < watcher_table::max_events + 5; ++i)
            table.push(*b, {std::to_string(i), "EVENT_TYPE_CREATE"});
        auto polled = table.take("sbx-b", *b);
        REQUIRE(polled);
        CHECK(polled->events.size() == watcher_table::max_events);
        CHECK(polled->dropped == 5);
        CHECK(polled->events.front().name == "5");
        CHECK(table.take("sbx-b", *b)->dropped == 0);
    }
    SUBCASE("at most max_watchers a sandbox") {
        for (std::size_t i = 1; i < watcher_table::max_watchers; ++i)
            REQUIRE(table.add("sbx-a", [] {}));
        CHECK_FALSE(table.add("sbx-a", [] {}));
        CHECK(table.add("sbx-c", [] {}));  // another sandbox has its own
    }
}
