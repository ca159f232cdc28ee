// envd's filesystem.Filesystem/WatchDir for the E2B facade (gateway/e2b/watch_rpc): the
// request's every bad form, inotify masks as envd's event types, and the stream's messages in
// Connect's envelopes.

#include <sys/inotify.h>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gateway/e2b/connect_envelope.hpp"
#include "gateway/e2b/watch_rpc.hpp"

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
