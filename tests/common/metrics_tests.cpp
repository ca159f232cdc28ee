#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "common/metrics.hpp"

using namespace callisto::metrics;

TEST_CASE("counters render with HELP, TYPE and one line per label set, in registration order") {
    registry r;
    auto& starts = r.counters("demo_starts_total", "Starts", {"kernelspec"});
    auto& open = r.gauges("demo_open", "Open things");
    starts.with({"python3"}).inc();
    starts.with({"python3"}).inc(2);
    starts.with({"ir"}).inc();
    open.get().set(7);
    CHECK(r.render() ==
          "# HELP demo_starts_total Starts\n"
          "# TYPE demo_starts_total counter\n"
          "demo_starts_total{kernelspec=\"ir\"} 1\n"
          "demo_starts_total{kernelspec=\"python3\"} 3\n"
          "# HELP demo_open Open things\n"
          "# TYPE demo_open gauge\n"
          "demo_open 7\n");
}

TEST_CASE("histograms render cumulative buckets, +Inf, _sum and _count") {
    registry r;
    auto& h = r.histograms("demo_seconds", "Time", {"api"}, {0.1, 1}).with({"v1"});
    h.observe(0.05);
    h.observe(0.1);  // le is "less than or equal"
    h.observe(0.5);
    h.observe(3);
    CHECK(r.render() ==
          "# HELP demo_seconds Time\n"
          "# TYPE demo_seconds histogram\n"
          "demo_seconds_bucket{api=\"v1\",le=\"0.1\"} 2\n"
          "demo_seconds_bucket{api=\"v1\",le=\"1\"} 3\n"
          "demo_seconds_bucket{api=\"v1\",le=\"+Inf\"} 4\n"
          "demo_seconds_sum{api=\"v1\"} 3.65\n"
          "demo_seconds_count{api=\"v1\"} 4\n");
}

TEST_CASE("label values and help texts are escaped as the text format asks") {
    CHECK(escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
    CHECK(escape_help("line\\one\ntwo \"quoted\"") == "line\\\\one\\ntwo \"quoted\"");
    registry r;
    r.counters("demo_total", "Help", {"path"}).with({"x\"y"}).inc();
    CHECK(r.render().find("demo_total{path=\"x\\\"y\"} 1\n") != std::string::npos);
}

TEST_CASE("values print as Prometheus reads them") {
    CHECK(format_value(0) == "0");
    CHECK(format_value(1.5) == "1.5");
    CHECK(format_value(1e21) == "1e+21");
    CHECK(format_value(std::numeric_limits<double>::infinity()) == "+Inf");
    CHECK(format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
    CHECK(format_value(std::nan("")) == "NaN");
}

TEST_CASE("collected families are read at each render") {
    registry r;
    double fds = 3;
    r.collected("demo_fds", "Descriptors", metric_type::gauge, {"kind"}, [&] {
        return std::vector<sample>{{{"socket"}, fds}};
    });
    CHECK(r.render().find("demo_fds{kind=\"socket\"} 3\n") != std::string::npos);
    fds = 4;
    CHECK(r.render().find("demo_fds{kind=\"socket\"} 4\n") != std::string::npos);
}

TEST_CASE("a name registered twice and unordered bounds are programming errors") {
    registry r;
    r.counters("demo_total", "x");
    CHECK_THROWS_AS(r.gauges("demo_total", "y"), std::logic_error);
    CHECK_THROWS_AS(r.histograms("demo_seconds", "z", {}, {1, 1}), std::invalid_argument);
    CHECK_THROWS_AS(r.histograms("demo_seconds2", "z", {}, {2, 1}), std::invalid_argument);
}

TEST_CASE("updates from many threads are all counted") {
    registry r;
    auto& family = r.counters("demo_total", "x", {"t"});
    auto& h = r.histograms("demo_bytes", "y", {}, exponential_buckets(1, 2, 4)).get();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 10000; ++i) {
                family.with({t % 2 ? "odd" : "even"}).inc();
                h.observe(i % 10);
            }
        });
    for (auto& t : threads) t.join();
    CHECK(family.with({"odd"}).value() == 20000);
    CHECK(family.with({"even"}).value() == 20000);
    CHECK(h.read().cumulative.back() == 40000);
}

TEST_CASE("exponential buckets") {
    CHECK(exponential_buckets(1, 4, 3) == std::vector<double>{1, 4, 16});
}
