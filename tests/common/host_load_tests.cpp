#include "common/host_load.hpp"

#include <doctest/doctest.h>

using callisto::host_load;
using callisto::host_load_sample;
using callisto::host_load_thresholds;
using namespace std::chrono_literals;

namespace {

host_load_sample sample(std::optional<double> pressure, std::chrono::milliseconds lag,
                        std::size_t kernels = 10) {
    host_load_sample s;
    s.cpu_pressure_percent = pressure;
    s.lag = lag;
    s.running_kernels = kernels;
    return s;
}

}  // namespace

TEST_CASE("CPU pressure is read from PSI's some avg10, and nothing else") {
    CHECK(callisto::parse_cpu_pressure("some avg10=74.60 avg60=23.89 avg300=13.10 total=8082\n"
                                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") ==
          doctest::Approx(74.6));
    CHECK(callisto::parse_cpu_pressure("some avg10=100.00 avg60=1 avg300=1 total=1") ==
          doctest::Approx(100));
    CHECK_FALSE(callisto::parse_cpu_pressure(""));
    CHECK_FALSE(callisto::parse_cpu_pressure("full avg10=3.00 avg60=0.00"));
    CHECK_FALSE(callisto::parse_cpu_pressure("some avg60=3.00\nfull avg10=5.00"));
    CHECK_FALSE(callisto::parse_cpu_pressure("some avg10=abc avg60=0"));
    CHECK_FALSE(callisto::parse_cpu_pressure("some avg10=250.0 avg60=0"));
}

TEST_CASE("runnable tasks are read from /proc/loadavg's fourth field") {
    CHECK(callisto::parse_runnable_tasks("0.52 0.41 0.30 3/456 7890\n") == doctest::Approx(3));
    CHECK(callisto::parse_runnable_tasks("1 2 3 17/20 1") == doctest::Approx(17));
    CHECK_FALSE(callisto::parse_runnable_tasks(""));
    CHECK_FALSE(callisto::parse_runnable_tasks("0.5 0.4 0.3"));
    CHECK_FALSE(callisto::parse_runnable_tasks("0.5 0.4 0.3 x/4 1"));
}

TEST_CASE("the host is saturated when the CPU is contended and the gateway or kernels lag") {
    host_load load;  // defaults: 90% pressure, 250 ms lag, two samples to enter, five to leave
    // Contended alone (a build elsewhere on the machine) refuses nothing.
    for (int i = 0; i < 5; ++i) load.update(sample(99.0, 20ms));
    CHECK_FALSE(load.saturated());
    CHECK_FALSE(load.over_thresholds());
    // A late event loop alone, on an idle CPU, is not the host's capacity either.
    for (int i = 0; i < 5; ++i) load.update(sample(10.0, 900ms));
    CHECK_FALSE(load.saturated());
    CHECK(load.reason().empty());

    // Both: one sample is not enough (a blip), the second is.
    load.update(sample(95.0, 400ms));
    CHECK(load.over_thresholds());
    CHECK_FALSE(load.saturated());
    load.update(sample(95.0, 400ms));
    REQUIRE(load.saturated());
    CHECK(load.reason().find("CPU pressure 95%") != std::string::npos);
    CHECK(load.reason().find("400 ms late") != std::string::npos);
    CHECK(load.retry_after_seconds() == 5);

    // It eases only after five calm samples in a row; a relapse starts the count again.
    for (int i = 0; i < 4; ++i) load.update(sample(50.0, 10ms));
    CHECK(load.saturated());
    CHECK_FALSE(load.reason().empty());  // still says why while it lasts
    load.update(sample(96.0, 300ms));
    for (int i = 0; i < 4; ++i) load.update(sample(50.0, 10ms));
    CHECK(load.saturated());
    load.update(sample(50.0, 10ms));
    CHECK_FALSE(load.saturated());
    CHECK(load.reason().empty());
}

TEST_CASE("a long run queue on a contended CPU is saturation, a short one is a busy machine") {
    host_load load;
    auto busy = sample(100.0, 2ms);
    busy.runnable_per_cpu = 1.5;  // a build with a job per CPU
    for (int i = 0; i < 5; ++i) load.update(busy);
    CHECK_FALSE(load.saturated());
    auto queued = busy;
    queued.runnable_per_cpu = 4.5;
    load.update(queued);
    load.update(queued);
    REQUIRE(load.saturated());
    CHECK(load.reason() ==
          "the host is past its capacity: CPU pressure 100%, 4.5 tasks ready to run per CPU");
}

TEST_CASE("kernels missing their heartbeat count as suffering, from a share and a floor") {
    host_load load;
    load.heartbeat_missing();  // one of ten: under the floor of two
    load.update(sample(95.0, 0ms, 10));
    load.update(sample(95.0, 0ms, 10));
    CHECK_FALSE(load.saturated());
    load.heartbeat_missing();  // two of ten: 20%, over the 10% share
    load.update(sample(95.0, 0ms, 10));
    load.update(sample(95.0, 0ms, 10));
    CHECK(load.saturated());
    CHECK(load.reason().find("2 of 10 kernels miss their heartbeat") != std::string::npos);
    // Two of a hundred is under the share.
    host_load many;
    many.heartbeat_missing();
    many.heartbeat_missing();
    many.update(sample(95.0, 0ms, 100));
    many.update(sample(95.0, 0ms, 100));
    CHECK_FALSE(many.saturated());
    many.heartbeat_back();
    CHECK(many.silent_kernels() == 1);
}

TEST_CASE("without PSI, runnable tasks per CPU say whether the CPU is contended") {
    host_load load;
    auto s = sample(std::nullopt, 500ms);
    s.runnable_per_cpu = 1.5;
    load.update(s);
    load.update(s);
    CHECK_FALSE(load.saturated());
    s.runnable_per_cpu = 6;
    load.update(s);
    load.update(s);
    CHECK(load.saturated());
    CHECK(load.reason().find("the CPU contended, 6.0 tasks ready to run per CPU") !=
          std::string::npos);
}

TEST_CASE("with shedding off, nothing is refused though the signals are still judged") {
    host_load load(host_load_thresholds{}, false);
    load.update(sample(99.0, 999ms));
    load.update(sample(99.0, 999ms));
    CHECK(load.over_thresholds());
    CHECK_FALSE(load.saturated());
    CHECK(load.reason().empty());
}

TEST_CASE("the thresholds are the operator's") {
    host_load_thresholds t;
    t.cpu_pressure_percent = 50;
    t.lag = 100ms;
    t.enter_samples = 1;
    host_load load(t);
    load.update(sample(60.0, 150ms));
    CHECK(load.saturated());
}
