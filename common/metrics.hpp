#pragma once
// Counters, gauges and histograms with labels, and their Prometheus text exposition (format
// 0.0.4). Updating a metric is lock-free (atomics); finding a labelled child takes the family's
// mutex, so hot paths look their children up once and keep the reference. Children live as
// long as the registry, at stable addresses.
//
// Label values must come from small, fixed sets (a route kind, a status, a kernelspec name):
// never a kernel id or a user name, whose number has no bound.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace callisto::metrics {

using label_values = std::vector<std::string>;

class counter {
public:
    void inc(double by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
    double value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0};
};

class gauge {
public:
    void set(double v) { value_.store(v, std::memory_order_relaxed); }
    void inc(double by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
    void dec(double by = 1) { value_.fetch_sub(by, std::memory_order_relaxed); }
    double value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0};
};

class histogram {
public:
    // Upper bounds, strictly increasing; +Inf is implied.
    explicit histogram(std::vector<double> bounds);
    void observe(double v);

    struct snapshot {
        std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf
        double sum = 0;
    };
    snapshot read() const;
    const std::vector<double>& bounds() const { return bounds_; }

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // bounds_.size() + 1, not cumulative
    std::atomic<double> sum_{0};
};

// Bucket bounds: start, start*factor, ... (count of them).
std::vector<double> exponential_buckets(double start, double factor, std::size_t count);

// One metric name, its help text and label names, and a child per label value set.
template <class Metric>
class family {
public:
    family(std::string name, std::string help, std::vector<std::string> label_names,
           std::function<std::unique_ptr<Metric>()> make)
        : name_(std::move(name)),
          help_(std::move(help)),
          label_names_(std::move(label_names)),
          make_(std::move(make)) {}

    // The child for these label values (as many as label names), made on first use.
    Metric& with(const label_values& values) {
        std::lock_guard lock(mutex_);
        auto& slot = children_[values];
        if (!slot) slot = make_();
        return *slot;
    }
    Metric& get() { return with({}); }

    const std::string& name() const { return name_; }
    const std::string& help() const { return help_; }
    const std::vector<std::string>& label_names() const { return label_names_; }

    template <class F>
    void for_each(F&& f) const {
        std::lock_guard lock(mutex_);
        for (const auto& [values, metric] : children_) f(values, *metric);
    }

private:
    const std::string name_;
    const std::string help_;
    const std::vector<std::string> label_names_;
    const std::function<std::unique_ptr<Metric>()> make_;
    mutable std::mutex mutex_;
    std::map<label_values, std::unique_ptr<Metric>> children_;
};

using counter_family = family<counter>;
using gauge_family = family<gauge>;
using histogram_family = family<histogram>;

// A value read when the metrics are scraped (kernels by state, open file descriptors), rather
// than kept up to date as things happen.
struct sample {
    label_values labels;
    double value = 0;
};

enum class metric_type { counter, gauge };

class registry {
public:
    // Names must be unique in the registry; a repeated name is a programming error (throws).
    counter_family& counters(std::string name, std::string help,
                             std::vector<std::string> label_names = {});
    gauge_family& gauges(std::string name, std::string help,
                         std::vector<std::string> label_names = {});
    histogram_family& histograms(std::string name, std::string help,
                                 std::vector<std::string> label_names, std::vector<double> bounds);
    // `read` runs on the scraping thread, at every scrape; it must be thread-safe.
    void collected(std::string name, std::string help, metric_type type,
                   std::vector<std::string> label_names, std::function<std::vector<sample>()> read);

    // The text exposition format, families in registration order.
    std::string render() const;

    static constexpr const char* content_type = "text/plain; version=0.0.4; charset=utf-8";

private:
    struct collected_family {
        std::string name, help;
        metric_type type;
        std::vector<std::string> label_names;
        std::function<std::vector<sample>()> read;
    };
    void claim_name(const std::string& name);

    mutable std::mutex mutex_;
    std::vector<std::string> names_;
    // Registration order, for a stable output.
    std::vector<std::function<void(std::string&)>> renderers_;
    std::vector<std::unique_ptr<counter_family>> counters_;
    std::vector<std::unique_ptr<gauge_family>> gauges_;
    std::vector<std::unique_ptr<histogram_family>> histograms_;
    std::vector<std::unique_ptr<collected_family>> collected_;
};

// Exposition helpers, public for tests: a label value and a HELP text escaped as the format
// asks, and a number as Prometheus prints it (+Inf, -Inf, NaN, shortest round-trip).
std::string escape_label_value(const std::string& v);
std::string escape_help(const std::string& v);
std::string format_value(double v);

}  // namespace callisto::metrics
