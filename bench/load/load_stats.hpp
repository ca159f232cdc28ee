#pragma once
// What a load run counts (every client updates it; one thread runs them all), the server's
// memory and descriptors over time, and the report: a progress line, a table, JSON.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "latency_histogram.hpp"
#include "load_options.hpp"

namespace callisto::load {

struct server_sample {
    double at_seconds = 0;
    std::uint64_t executions = 0;  // answered so far
    std::optional<double> rss_bytes;
    std::optional<double> open_fds;
};

struct load_stats {
    std::uint64_t sent = 0;
    std::uint64_t as_expected = 0;
    std::uint64_t wrong = 0;              // answered, but not as the snippet expects
    std::uint64_t lost = 0;               // no answer within --timeout
    std::uint64_t refused = 0;            // a 429 or 503: the server's limits said no
    std::uint64_t setup_refusals = 0;     // kernels or contexts refused with Retry-After, retried
    std::uint64_t connection_errors = 0;  // a connect failed, or a connection dropped
    // Jupyter WebSockets reopened mid-execution (without --no-resume), and the executions
    // answered after one; of those, how many never got their execute_reply and were judged by
    // their iopub output (status idle, an error message or none).
    std::uint64_t reconnects = 0;
    std::uint64_t resumed = 0;
    std::uint64_t resumed_without_reply = 0;
    int clients_running = 0;
    // Latencies of the executions sent after the ramp-up, when every client runs; those sent
    // during it (WebSockets still opening, kernels' first executions) are checked and counted
    // all the same, and their latencies kept apart.
    latency_histogram latency;
    std::map<std::string, latency_histogram> by_kind;
    latency_histogram ramp_up_latency;
    std::vector<std::string> samples_of_problems;  // the first few, for the report
    std::vector<server_sample> timeline;

    void answered(const std::string& kind, std::chrono::microseconds took, bool expected,
                  const std::string& problem, bool sent_during_ramp_up = false);
    void problem(const std::string& what);
    std::uint64_t answered_count() const { return as_expected + wrong; }
    bool clean() const { return wrong == 0 && lost == 0 && connection_errors == 0; }
};

std::string progress_line(const load_stats& stats, double elapsed_seconds);
std::string report_table(const load_stats& stats, const load_options& options,
                         double elapsed_seconds);
nlohmann::json report_json(const load_stats& stats, const load_options& options,
                           double elapsed_seconds);

// The value of an unlabelled sample `name` in Prometheus text.
std::optional<double> prometheus_value(const std::string& text, const std::string& name);

}  // namespace callisto::load
