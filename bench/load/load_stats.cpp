#include "load_stats.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace callisto::load {

namespace {

std::string fixed(double value, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

double ms(std::chrono::microseconds us) { return static_cast<double>(us.count()) / 1000.0; }

nlohmann::json latency_json(const latency_histogram& h) {
    return {{"count", h.count()},
            {"mean_ms", h.mean_ms()},
            {"p50_ms", ms(h.percentile(0.50))},
            {"p90_ms", ms(h.percentile(0.90))},
            {"p99_ms", ms(h.percentile(0.99))},
            {"p999_ms", ms(h.percentile(0.999))},
            {"max_ms", ms(h.max())}};
}

std::string megabytes(const std::optional<double>& bytes) {
    return bytes ? fixed(*bytes / 1e6, 1) + " MB" : "?";
}

}  // namespace

void load_stats::answered(const std::string& kind, std::chrono::microseconds took, bool expected,
                          const std::string& why, bool sent_during_ramp_up) {
    if (sent_during_ramp_up) {
        ramp_up_latency.record(took);
    } else {
        latency.record(took);
        by_kind[kind].record(took);
    }
    if (expected) {
        ++as_expected;
    } else {
        ++wrong;
        problem(kind + ": " + why);
    }
}

void load_stats::problem(const std::string& what) {
    if (samples_of_problems.size() < 10) samples_of_problems.push_back(what);
}

std::string progress_line(const load_stats& s, double elapsed) {
    const auto& latency = s.latency.count() > 0 ? s.latency : s.ramp_up_latency;
    std::ostringstream line;
    line << "t=" << fixed(elapsed, 0) << "s clients " << s.clients_running << " executions "
         << s.answered_count() << " ("
         << fixed(elapsed > 0 ? static_cast<double>(s.answered_count()) / elapsed : 0, 1)
         << "/s) p50 " << fixed(ms(latency.percentile(0.5)), 1) << " ms p99 "
         << fixed(ms(latency.percentile(0.99)), 1) << " ms lost " << s.lost << " wrong " << s.wrong
         << " conn errors " << s.connection_errors;
    if (s.reconnects > 0) line << " reconnects " << s.reconnects;
    if (!s.timeline.empty()) line << " server RSS " << megabytes(s.timeline.back().rss_bytes);
    return line.str();
}

std::string report_table(const load_stats& s, const load_options& o, double elapsed) {
    std::ostringstream out;
    out << "callisto-load: " << o.clients << " clients over " << o.kernels
        << (o.api == api_kind::v1 ? " contexts (/v1)" : " kernels (Jupyter WebSocket)") << ", "
        << fixed(elapsed, 1) << " s, think " << o.think.count() << " ms\n";
    out << "executions   " << s.answered_count() << " answered ("
        << fixed(elapsed > 0 ? static_cast<double>(s.answered_count()) / elapsed : 0, 1) << "/s), "
        << s.as_expected << " as expected, " << s.wrong << " wrong, " << s.lost << " lost, "
        << s.refused << " refused; " << s.connection_errors << " connection errors, "
        << s.reconnects << " reconnections, " << s.resumed << " executions resumed ("
        << s.resumed_without_reply << " without their reply)\n";
    if (s.setup_refusals > 0)
        out << "setup        " << s.setup_refusals
            << " kernel or context creations refused with Retry-After, and retried\n";
    out << "\n";
    char row[160];
    std::snprintf(row, sizeof row, "%-10s %9s %9s %9s %9s %9s %9s\n", "kind", "count", "p50 ms",
                  "p90 ms", "p99 ms", "p99.9 ms", "max ms");
    if (o.ramp_up.count() > 0)
        out << "latencies of the executions sent after the ramp-up (the ramp-up's own: last row)\n";
    out << row;
    auto line = [&](const std::string& name, const latency_histogram& h) {
        std::snprintf(row, sizeof row, "%-10s %9llu %9.1f %9.1f %9.1f %9.1f %9.1f\n", name.c_str(),
                      static_cast<unsigned long long>(h.count()), ms(h.percentile(0.5)),
                      ms(h.percentile(0.9)), ms(h.percentile(0.99)), ms(h.percentile(0.999)),
                      ms(h.max()));
        out << row;
    };
    line("all", s.latency);
    for (const auto& [kind, h] : s.by_kind) line(kind, h);
    if (s.ramp_up_latency.count() > 0) line("(ramp-up)", s.ramp_up_latency);
    if (!s.timeline.empty()) {
        std::optional<double> peak;
        for (const auto& t : s.timeline)
            if (t.rss_bytes) peak = std::max(peak.value_or(0), *t.rss_bytes);
        const auto& first = s.timeline.front();
        const auto& last = s.timeline.back();
        out << "\nserver       RSS " << megabytes(first.rss_bytes) << " at start, "
            << megabytes(last.rss_bytes) << " at the end, " << megabytes(peak) << " peak; fds "
            << (first.open_fds ? fixed(*first.open_fds, 0) : "?") << " -> "
            << (last.open_fds ? fixed(*last.open_fds, 0) : "?") << "\n";
    }
    if (!s.samples_of_problems.empty()) {
        out << "\nfirst problems:\n";
        for (const auto& p : s.samples_of_problems) out << "  " << p << "\n";
    }
    return out.str();
}

nlohmann::json report_json(const load_stats& s, const load_options& o, double elapsed) {
    nlohmann::json kinds = nlohmann::json::object();
    for (const auto& [kind, h] : s.by_kind) kinds[kind] = latency_json(h);
    nlohmann::json timeline = nlohmann::json::array();
    for (const auto& t : s.timeline)
        timeline.push_back({{"t", t.at_seconds},
                            {"executions", t.executions},
                            {"rss_bytes", t.rss_bytes ? nlohmann::json(*t.rss_bytes) : nullptr},
                            {"open_fds", t.open_fds ? nlohmann::json(*t.open_fds) : nullptr}});
    nlohmann::json mix = nlohmann::json::object();
    for (const auto& [kind, weight] : o.mix) mix[kind] = weight;
    return {
        {"config",
         {{"api", o.api == api_kind::v1 ? "v1" : "jupyter"},
          {"clients", o.clients},
          {"kernels", o.kernels},
          {"duration_s", o.duration.count()},
          {"ramp_up_s", o.ramp_up.count()},
          {"think_ms", o.think.count()},
          {"kernelspec", o.kernel},
          {"resume", o.resume},
          {"mix", mix}}},
        {"elapsed_s", elapsed},
        {"sent", s.sent},
        {"answered", s.answered_count()},
        {"throughput_per_s", elapsed > 0 ? static_cast<double>(s.answered_count()) / elapsed : 0.0},
        {"as_expected", s.as_expected},
        {"wrong", s.wrong},
        {"lost", s.lost},
        {"refused", s.refused},
        {"setup_refusals", s.setup_refusals},
        {"connection_errors", s.connection_errors},
        {"reconnects", s.reconnects},
        {"resumed", s.resumed},
        {"resumed_without_reply", s.resumed_without_reply},
        {"latency", latency_json(s.latency)},
        {"by_kind", kinds},
        {"ramp_up_latency", latency_json(s.ramp_up_latency)},
        {"server", timeline},
        {"problems", s.samples_of_problems}};
}

std::optional<double> prometheus_value(const std::string& text, const std::string& name) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(name, 0) != 0 || line.size() <= name.size() || line[name.size()] != ' ')
            continue;
        try {
            return std::stod(line.substr(name.size() + 1));
        } catch (const std::exception&) {
            return std::nullopt;
        }
    }
    return std::nullopt;
}

}  // namespace callisto::load
