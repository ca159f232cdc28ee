#include "common/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace callisto::metrics {

histogram::histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {
    if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
        std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end())
        throw std::invalid_argument("histogram bounds must increase strictly");
}

void histogram::observe(double v) {
    // The first bound >= v: Prometheus buckets are "less than or equal".
    const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
    buckets_[static_cast<std::size_t>(at)].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
}

histogram::snapshot histogram::read() const {
    snapshot s;
    std::uint64_t running = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
        running += buckets_[i].load(std::memory_order_relaxed);
        s.cumulative.push_back(running);
    }
    s.sum = sum_.load(std::memory_order_relaxed);
    return s;
}

std::vector<double> exponential_buckets(double start, double factor, std::size_t count) {
    std::vector<double> out;
    for (double b = start; out.size() < count; b *= factor) out.push_back(b);
    return out;
}

namespace {

// The text format's escapes: a backslash and a newline always, a double quote where `quote`
// (inside a label value's quotes).
std::string escaped(const std::string& v, bool quote) {
    std::string out;
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"' && quote)
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

}  // namespace

std::string escape_label_value(const std::string& v) { return escaped(v, true); }

std::string escape_help(const std::string& v) { return escaped(v, false); }

std::string format_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, end);
}

namespace {

void write_header(std::string& out, const std::string& name, const std::string& help,
                  const char* type) {
    out += "# HELP " + name + " " + escape_help(help) + "\n";
    out += "# TYPE " + name + " " + type + "\n";
}

// `{a="x",b="y"}` (with `extra` appended, for a histogram's le), or "" without labels.
std::string label_set(const std::vector<std::string>& names, const label_values& values,
                      const std::string& extra = {}) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
        out += out.empty() ? "{" : ",";
        out += names[i] + "=\"" + escape_label_value(values[i]) + "\"";
    }
    if (!extra.empty()) out += (out.empty() ? "{" : ",") + extra;
    return out.empty() ? out : out + "}";
}

template <class Family>
void write_simple(std::string& out, const Family& f, const char* type) {
    write_header(out, f.name(), f.help(), type);
    f.for_each([&](const label_values& values, const auto& m) {
        out += f.name() + label_set(f.label_names(), values) + " " + format_value(m.value()) + "\n";
    });
}

void write_histograms(std::string& out, const histogram_family& f) {
    write_header(out, f.name(), f.help(), "histogram");
    f.for_each([&](const label_values& values, const histogram& h) {
        const auto s = h.read();
        for (std::size_t i = 0; i <= h.bounds().size(); ++i) {
            const std::string le =
                i < h.bounds().size() ? format_value(h.bounds()[i]) : std::string("+Inf");
            out += f.name() + "_bucket" + label_set(f.label_names(), values, "le=\"" + le + "\"") +
                   " " + std::to_string(s.cumulative[i]) + "\n";
        }
        const std::string labels = label_set(f.label_names(), values);
        out += f.name() + "_sum" + labels + " " + format_value(s.sum) + "\n";
        out += f.name() + "_count" + labels + " " + std::to_string(s.cumulative.back()) + "\n";
    });
}

}  // namespace

void registry::claim_name(const std::string& name) {
    if (std::find(names_.begin(), names_.end(), name) != names_.end())
        throw std::logic_error("metric registered twice: " + name);
    names_.push_back(name);
}

counter_family& registry::counters(std::string name, std::string help,
                                   std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    claim_name(name);
    auto& f = *counters_.emplace_back(
        std::make_unique<counter_family>(std::move(name), std::move(help), std::move(label_names),
                                         [] { return std::make_unique<counter>(); }));
    renderers_.push_back([&f](std::string& out) { write_simple(out, f, "counter"); });
    return f;
}

gauge_family& registry::gauges(std::string name, std::string help,
                               std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    claim_name(name);
    auto& f = *gauges_.emplace_back(
        std::make_unique<gauge_family>(std::move(name), std::move(help), std::move(label_names),
                                       [] { return std::make_unique<gauge>(); }));
    renderers_.push_back([&f](std::string& out) { write_simple(out, f, "gauge"); });
    return f;
}

histogram_family& registry::histograms(std::string name, std::string help,
                                       std::vector<std::string> label_names,
                                       std::vector<double> bounds) {
    std::lock_guard lock(mutex_);
    claim_name(name);
    histogram probe(bounds);  // refuses bad bounds here, at registration
    auto& f = *histograms_.emplace_back(std::make_unique<histogram_family>(
        std::move(name), std::move(help), std::move(label_names),
        [bounds = std::move(bounds)] { return std::make_unique<histogram>(bounds); }));
    renderers_.push_back([&f](std::string& out) { write_histograms(out, f); });
    return f;
}

void registry::collected(std::string name, std::string help, metric_type type,
                         std::vector<std::string> label_names,
                         std::function<std::vector<sample>()> read) {
    std::lock_guard lock(mutex_);
    claim_name(name);
    auto& f = *collected_.emplace_back(std::make_unique<collected_family>(collected_family{
        std::move(name), std::move(help), type, std::move(label_names), std::move(read)}));
    renderers_.push_back([&f](std::string& out) {
        write_header(out, f.name, f.help, f.type == metric_type::counter ? "counter" : "gauge");
        for (const auto& s : f.read())
            out += f.name + label_set(f.label_names, s.labels) + " " + format_value(s.value) + "\n";
    });
}

std::string registry::render() const {
    std::vector<std::function<void(std::string&)>> renderers;
    {
        std::lock_guard lock(mutex_);
        renderers = renderers_;
    }
    std::string out;
    for (const auto& r : renderers) r(out);
    return out;
}

}  // namespace callisto::metrics
