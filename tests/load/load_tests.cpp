// callisto-load without a server: percentiles, the snippet mix, the command line and the
// report.

#include <random>
#include <stdexcept>

#include <doctest/doctest.h>

#include <boost/asio/error.hpp>
#include <boost/beast/websocket/error.hpp>

#include "gateway_connection.hpp"
#include "gateway_stream.hpp"
#include "latency_histogram.hpp"
#include "load_options.hpp"
#include "load_run.hpp"
#include "load_stats.hpp"
#include "scenario.hpp"

using namespace callisto::load;
using std::chrono::microseconds;

TEST_CASE("the histogram's percentiles are within its bucket width of the true ones") {
    latency_histogram h;
    for (int i = 1; i <= 10000; ++i) h.record(microseconds(i * 100));  // 0.1 ms .. 1 s
    auto near = [](microseconds got, double want_us) {
        return got.count() >= want_us * 0.98 && got.count() <= want_us * 1.02;
    };
    CHECK(near(h.percentile(0.5), 500000));
    CHECK(near(h.percentile(0.9), 900000));
    CHECK(near(h.percentile(0.99), 990000));
    CHECK(h.max() == microseconds(1000000));
    CHECK(h.count() == 10000);
    CHECK(h.mean_ms() == doctest::Approx(500.05));

    latency_histogram small;
    for (int i = 0; i < 64; ++i) small.record(microseconds(i));  // exact below 64 µs
    CHECK(small.percentile(0.5) == microseconds(31));
    CHECK(latency_histogram{}.percentile(0.99) == microseconds(0));

    latency_histogram merged;
    merged.merge(h);
    merged.merge(small);
    CHECK(merged.count() == 10064);
    latency_histogram huge;
    huge.record(std::chrono::hours(48));  // past the last bucket: kept there, max exact
    CHECK(huge.percentile(1.0) == std::chrono::hours(48));
}

TEST_CASE("a mix draws its kinds in proportion to their weights") {
    snippet_mix mix({{"tiny", 3}, {"fail", 1}, {"plot", 0}});
    std::mt19937 random(1);
    int tiny = 0, fail = 0, other = 0;
    for (int i = 0; i < 4000; ++i) {
        const auto kind = mix.draw(random);
        (kind == snippet_kind::tiny ? tiny : kind == snippet_kind::fail ? fail : other)++;
    }
    CHECK(other == 0);
    CHECK(tiny > 2800);
    CHECK(tiny < 3200);
    CHECK(snippet_of(snippet_kind::fail).expect_error == "ZeroDivisionError");
}

TEST_CASE("a bad --mix is refused; a good one replaces the default") {
    CHECK(parse_mix("tiny=1,print=2"));
    CHECK_FALSE(parse_mix("tiny=1,walk=2"));
    CHECK_FALSE(parse_mix("tiny"));
    CHECK_FALSE(parse_mix("tiny=-1"));
    CHECK_FALSE(parse_mix("tiny=0"));
    CHECK_FALSE(parse_mix("tiny=1x"));
    auto r = parse_load_options({"--token=t", "--mix=sleep=1"});
    REQUIRE(r.options);
    CHECK(r.options->mix == std::map<std::string, int>{{"sleep", 1}});
}

TEST_CASE("the command line: defaults, every option, and its bad forms") {
    auto r = parse_load_options({"--token=t"});
    REQUIRE(r.options);
    CHECK(r.options->host == "127.0.0.1");
    CHECK(r.options->port == "8888");
    CHECK(r.options->mix == default_mix());
    r = parse_load_options({"--url=http://10.0.0.5:9000/", "--token=t", "--api=v1", "--clients=500",
                            "--kernels=50", "--duration=1800", "--ramp-up=60", "--think-ms=250",
                            "--timeout=90", "--kernel=ir", "--json=out.json", "--no-progress",
                            "--keep-kernels"});
    REQUIRE(r.options);
    const auto& o = *r.options;
    CHECK(o.host == "10.0.0.5");
    CHECK(o.port == "9000");
    CHECK(o.api == api_kind::v1);
    CHECK(o.clients == 500);
    CHECK(o.kernels == 50);
    CHECK(o.duration == std::chrono::seconds(1800));
    CHECK(o.ramp_up == std::chrono::seconds(60));
    CHECK(o.think == std::chrono::milliseconds(250));
    CHECK(o.execution_timeout == std::chrono::seconds(90));
    CHECK(o.kernel == "ir");
    CHECK(o.json_file == "out.json");
    CHECK_FALSE(o.progress);
    CHECK(o.keep_kernels);
    CHECK(o.resume);  // the default: a dropped WebSocket is reopened
    auto no_resume = parse_load_options({"--token=t", "--no-resume"});
    REQUIRE(no_resume.options);
    CHECK_FALSE(no_resume.options->resume);

    for (const char* bad :
         {"--clients=0", "--clients=ten", "--duration=0", "--api=grpc", "--url=ftp://x:1",
          "--url=http://", "--think-ms=-5", "--frobnicate=1", "positional", "--kernels=1e3",
          "--ca-file=", "--ca-file=ca.pem", "--insecure-skip-verify"}) {
        INFO(bad);
        auto refused = parse_load_options({"--token=t", bad});
        CHECK_FALSE(refused.options);
        CHECK(refused.exit_code == 2);
        CHECK_FALSE(refused.message.empty());
    }
    auto help = parse_load_options({"--help"});
    CHECK_FALSE(help.options);
    CHECK(help.exit_code == 0);
    CHECK(help.message.find("--clients=N") != std::string::npos);
    CHECK(help.message.find("--no-resume") != std::string::npos);
}

TEST_CASE("--url takes http:// and https://, with the default ports, and refuses the rest") {
    const auto check_accepted = [](const char* text, bool tls, const char* host, const char* port) {
        INFO(text);
        const auto u = parse_gateway_url(text).url;
        REQUIRE(u);
        CHECK(u->tls == tls);
        CHECK(u->host == host);
        CHECK(u->port == port);
    };
    check_accepted("https://gw.example:8443", true, "gw.example", "8443");
    check_accepted("https://gw.example/", true, "gw.example", "443");
    check_accepted("http://127.0.0.1", false, "127.0.0.1", "80");
    check_accepted("https://[::1]:8951", true, "::1", "8951");
    check_accepted("http://[::1]", false, "::1", "80");
    check_accepted("http://127.0.0.1:65535", false, "127.0.0.1", "65535");

    for (const char* bad : {"",
                            "127.0.0.1:8888",
                            "ftp://x:1",
                            "HTTP://x:1",
                            "wss://x:1",
                            "https://",
                            "https://:443",
                            "http://x:",
                            "http://x:0",
                            "http://x:65536",
                            "http://x:080",
                            "http://x:88a",
                            "http://x:-1",
                            "http://x:80:90",
                            "http://::1:8888",
                            "http://[::1",
                            "http://[]:80",
                            "http://[::1]x",
                            "http://[::1]:",
                            "http://user@x:80",
                            "http://x:80?token=t",
                            "http://x:80#f",
                            "https://x:443/callisto",
                            "http://x y:80"}) {
        INFO(bad);
        const auto parsed = parse_gateway_url(bad);
        CHECK_FALSE(parsed.url);
        CHECK_FALSE(parsed.error.empty());
    }
    CHECK(parse_gateway_url("https://x/api").error.find("no path") != std::string::npos);
    CHECK(parse_gateway_url("http://x:0").error.find("1 to 65535") != std::string::npos);
}

TEST_CASE("an https:// run takes a CA file or skips verification, never both, never for http") {
    auto r = parse_load_options({"--token=t", "--url=https://127.0.0.1:8951"});
    REQUIRE(r.options);
    CHECK(r.options->tls);
    CHECK(r.options->ca_file.empty());  // the system's store
    CHECK_FALSE(r.options->insecure_skip_verify);
    r = parse_load_options({"--token=t", "--url=https://127.0.0.1:8951", "--ca-file=/tmp/ca.pem"});
    REQUIRE(r.options);
    CHECK(r.options->ca_file == "/tmp/ca.pem");
    r = parse_load_options({"--token=t", "--url=https://127.0.0.1:8951", "--insecure-skip-verify"});
    REQUIRE(r.options);
    CHECK(r.options->insecure_skip_verify);

    r = parse_load_options({"--token=t", "--url=https://127.0.0.1:8951", "--ca-file=/tmp/ca.pem",
                            "--insecure-skip-verify"});
    CHECK_FALSE(r.options);
    CHECK(r.exit_code == 2);
    CHECK(r.message.find("one of them") != std::string::npos);
    r = parse_load_options({"--token=t", "--url=http://127.0.0.1:8951", "--ca-file=/tmp/ca.pem"});
    CHECK_FALSE(r.options);
    CHECK(r.message.find("https://") != std::string::npos);
    r = parse_load_options({"--token=t", "--url=https://127.0.0.1:8951/x"});
    CHECK_FALSE(r.options);
    CHECK(r.message.find("--url https://127.0.0.1:8951/x: no path") != std::string::npos);
}

TEST_CASE("a CA file that cannot be read refuses the run, naming it") {
    load_options o;
    o.tls = true;
    o.ca_file = "/nonexistent/ca.pem";
    try {
        make_tls_context(o);
        FAIL("a missing CA file was accepted");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find("--ca-file /nonexistent/ca.pem: ") == 0);
    }
    o.ca_file.clear();
    CHECK(make_tls_context(o));  // the system's store
    o.insecure_skip_verify = true;
    CHECK(make_tls_context(o)->native_handle() != nullptr);
}

TEST_CASE("the Host header brackets an IPv6 address") {
    CHECK(host_header("127.0.0.1", "8888") == "127.0.0.1:8888");
    CHECK(host_header("gw.example", "443") == "gw.example:443");
    CHECK(host_header("::1", "8951") == "[::1]:8951");
}

TEST_CASE("the report counts answers, problems and the server's memory over time") {
    load_stats s;
    s.sent = 4;
    s.answered("tiny", microseconds(2000), true, "");
    s.answered("tiny", microseconds(4000), true, "");
    s.answered("fail", microseconds(3000), false, "expected ZeroDivisionError (status ok)");
    s.lost = 1;
    s.timeline.push_back({0, 0, 100e6, 50});
    s.timeline.push_back({1, 3, 110e6, 52});
    CHECK_FALSE(s.clean());
    load_options o;
    const auto table = report_table(s, o, 2.0);
    CHECK(table.find("3 answered (1.5/s), 2 as expected, 1 wrong, 1 lost") != std::string::npos);
    CHECK(table.find("fail: expected ZeroDivisionError") != std::string::npos);
    CHECK(table.find("RSS 100.0 MB at start, 110.0 MB at the end, 110.0 MB peak; fds 50 -> 52") !=
          std::string::npos);
    const auto j = report_json(s, o, 2.0);
    CHECK(j["answered"] == 3);
    CHECK(j["lost"] == 1);
    CHECK(j["by_kind"]["tiny"]["count"] == 2);
    CHECK(j["server"].size() == 2);
    CHECK(progress_line(s, 2.0).find("executions 3 (1.5/s)") != std::string::npos);
}

TEST_CASE("executions sent during the ramp-up are counted, their latencies kept apart") {
    load_stats s;
    s.answered("tiny", microseconds(900000), true, "", true);
    CHECK(progress_line(s, 1.0).find("p50 9") != std::string::npos);  // all there is so far
    s.answered("tiny", microseconds(2000), true, "");
    s.answered("fail", microseconds(500000), false, "expected ZeroDivisionError (status ok)", true);
    CHECK(s.answered_count() == 3);
    CHECK(s.wrong == 1);
    CHECK(s.latency.count() == 1);
    CHECK(s.by_kind["tiny"].count() == 1);
    CHECK(s.by_kind.count("fail") == 0);
    CHECK(s.ramp_up_latency.count() == 2);
    load_options o;
    o.ramp_up = std::chrono::seconds(10);
    const auto table = report_table(s, o, 2.0);
    CHECK(table.find("sent after the ramp-up") != std::string::npos);
    CHECK(table.find("(ramp-up)          2") != std::string::npos);
    CHECK(report_json(s, o, 2.0)["ramp_up_latency"]["count"] == 2);
    CHECK(progress_line(s, 1.0).find("p50 2.0 ms") != std::string::npos);
}

TEST_CASE("values are read from Prometheus text by their exact name") {
    const std::string text =
        "# HELP process_resident_memory_bytes Resident memory\n"
        "process_resident_memory_bytes_total 1\n"
        "process_resident_memory_bytes 9.5e+07\n"
        "process_open_fds 42\n";
    CHECK(prometheus_value(text, "process_resident_memory_bytes") == 9.5e7);
    CHECK(prometheus_value(text, "process_open_fds") == 42);
    CHECK_FALSE(prometheus_value(text, "process_max_fds"));
}

TEST_CASE("think pauses are drawn around the mean, never all alike") {
    std::mt19937 random(7);
    const std::chrono::milliseconds mean(200);
    std::int64_t sum = 0, lowest = INT64_MAX, highest = 0;
    for (int i = 0; i < 2000; ++i) {
        const auto p = think_pause(mean, random).count();
        sum += p;
        lowest = std::min(lowest, p);
        highest = std::max(highest, p);
    }
    CHECK(lowest >= 100000);
    CHECK(highest <= 300000);
    CHECK(highest - lowest > 150000);
    CHECK(sum / 2000 == doctest::Approx(200000).epsilon(0.05));
    CHECK(think_pause(std::chrono::milliseconds(0), random).count() == 0);
}

TEST_CASE("clients start evenly over the ramp-up, not in bursts of a second") {
    using std::chrono::microseconds;
    const std::chrono::seconds ramp(3);
    CHECK(ramp_up_delay(ramp, 0, 60) == microseconds(0));
    CHECK(ramp_up_delay(ramp, 1, 60) == microseconds(50000));
    CHECK(ramp_up_delay(ramp, 59, 60) == microseconds(2950000));
    for (int i = 1; i < 60; ++i) CHECK(ramp_up_delay(ramp, i, 60) > ramp_up_delay(ramp, i - 1, 60));
    // The largest the options allow: an hour over 100,000 clients.
    CHECK(ramp_up_delay(std::chrono::seconds(3600), 99999, 100000) < std::chrono::hours(1));
    CHECK(ramp_up_delay(ramp, 5, 0) == microseconds(0));
}

TEST_CASE("a relayed message's sequence number is found without parsing it") {
    // As the gateway writes it: spliced first into the metadata, after the header and parent.
    const std::string stamped =
        R"({"header":{"msg_id":"a","msg_type":"status"},"msg_id":"a","msg_type":"status",)"
        R"("parent_header":{},"metadata":{"callisto_seq":4711,"x":1},)"
        R"("content":{"execution_state":"idle"},"buffers":[],"channel":"iopub"})";
    CHECK(message_sequence(stamped) == 4711u);
    CHECK(message_sequence(R"({"metadata":{"callisto_seq":7}})") == 7u);
    CHECK(message_sequence(R"({"metadata":{"callisto_seq": 18446744073709551615}})") ==
          18446744073709551615ull);
    CHECK_FALSE(message_sequence(R"({"metadata":{}})"));
    CHECK_FALSE(message_sequence(R"({"metadata":{"callisto_seq":"x"}})"));
    CHECK_FALSE(message_sequence(R"({"metadata":{"callisto_seq":)"));
    // Printed by a user, the key's quotes are escaped: not a sequence number.
    CHECK_FALSE(message_sequence(R"({"content":{"text":"\"callisto_seq\":12"}})"));
    // In a binary frame (a message with buffers), the JSON part is searched the same way.
    const std::string binary = std::string("\0\0\0\2\0\0\0\14", 8) +
                               R"({"metadata":{"callisto_seq":99}})" + std::string("\xff\0", 2);
    CHECK(message_sequence(binary) == 99u);
}

TEST_CASE("the gateway's replay-gap notice is recognised, and nothing else is") {
    const auto notice = nlohmann::json::parse(
        R"({"header":{"msg_type":"stream"},"parent_header":{},)"
        R"("metadata":{"callisto_gap":{"from":5,"to":120}},)"
        R"("content":{"name":"stderr","text":"[callisto] output 5-120 was dropped"}})");
    CHECK(mentions_replay_gap(notice.dump()));
    const auto gap = replay_gap(notice);
    REQUIRE(gap);
    CHECK(gap->first == 5u);
    CHECK(gap->second == 120u);
    CHECK_FALSE(replay_gap(nlohmann::json::parse(R"({"metadata":{"callisto_seq":3}})")));
    CHECK_FALSE(replay_gap(nlohmann::json::parse(R"({"metadata":{"callisto_gap":true}})")));
    CHECK_FALSE(replay_gap(nlohmann::json::parse(R"({"metadata":{"callisto_gap":{"from":1}}})")));
    CHECK_FALSE(replay_gap(nlohmann::json::array()));
    CHECK_FALSE(mentions_replay_gap(R"({"content":{"text":"\"callisto_gap\":"}})"));
}

TEST_CASE("the channels URL names the session, and the last sequence number on a resume") {
    CHECK(channels_target("k1", "s-1", std::nullopt) == "/api/kernels/k1/channels?session_id=s-1");
    CHECK(channels_target("k1", "s-1", 0) == "/api/kernels/k1/channels?session_id=s-1&since=0");
    CHECK(channels_target("k1", "s-1", 4711) ==
          "/api/kernels/k1/channels?session_id=s-1&since=4711");
    CHECK(channels_target("k1", "a b&c", std::nullopt) ==
          "/api/kernels/k1/channels?session_id=a%20b%26c");
    const auto session = new_id();  // what load_run sends: nothing to encode
    CHECK(channels_target("k", session, std::nullopt) ==
          "/api/kernels/k/channels?session_id=" + session);
}

TEST_CASE("why a WebSocket dropped: the server's close code and reason, or the error") {
    namespace websocket = boost::beast::websocket;
    CHECK(drop_reason(
              websocket::error::closed,
              websocket::close_reason(websocket::close_code::going_away, "kernel restarted")) ==
          "the server closed it with code 1001 \"kernel restarted\"");
    CHECK(drop_reason(websocket::error::closed, websocket::close_reason(4000)) ==
          "the server closed it with code 4000");
    CHECK(drop_reason(websocket::error::closed, websocket::close_reason()) ==
          "the server closed it (a close frame, no code)");
    CHECK(drop_reason(boost::asio::error::eof, {}) ==
          "the server closed the TCP connection without a close frame");
    CHECK(drop_reason(boost::asio::error::connection_reset, {}).find("reset") != std::string::npos);
    CHECK_FALSE(drop_reason(boost::asio::error::timed_out, {}).empty());
    const handshake_refused gone(404, R"({"message":"Kernel does not exist: k"})");
    CHECK(gone.status == 404);
    CHECK(std::string(gone.what()) ==
          R"(the WebSocket handshake was answered 404: {"message":"Kernel does not exist: k"})");
    CHECK(std::string(handshake_refused(403, "").what()) ==
          "the WebSocket handshake was answered 403");
}

TEST_CASE("the report counts reconnections and the executions they resumed") {
    load_stats s;
    s.sent = 3;
    s.answered("tiny", microseconds(2000), true, "");
    s.connection_errors = 2;
    s.reconnects = 2;
    s.resumed = 1;
    s.resumed_without_reply = 1;
    load_options o;
    const auto table = report_table(s, o, 1.0);
    CHECK(table.find("2 connection errors, 2 reconnections, 1 executions resumed (1 without their "
                     "reply)") != std::string::npos);
    const auto j = report_json(s, o, 1.0);
    CHECK(j["reconnects"] == 2);
    CHECK(j["resumed"] == 1);
    CHECK(j["resumed_without_reply"] == 1);
    CHECK(j["config"]["resume"] == true);
    CHECK(progress_line(s, 1.0).find("reconnects 2") != std::string::npos);
    CHECK(progress_line(load_stats{}, 1.0).find("reconnects") == std::string::npos);
}
