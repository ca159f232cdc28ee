#include "latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace callisto::load {

std::size_t latency_histogram::index_of(std::uint64_t us) {
    // Below 64 µs each microsecond has its bucket; above, a power of two holds 64 buckets.
    if (us < sub_buckets) return static_cast<std::size_t>(us);
    const int power = std::bit_width(us) - 1;  // 6 for 64..127
    const auto sub = (us >> (power - 6)) - sub_buckets;
    const auto index = static_cast<std::size_t>(power - 5) * sub_buckets + sub;
    return std::min<std::size_t>(index, sub_buckets * powers - 1);
}

std::uint64_t latency_histogram::upper_bound_of(std::size_t index) {
    if (index < sub_buckets) return index;
    const auto power = index / sub_buckets + 5;
    const auto sub = index % sub_buckets + sub_buckets;
    return ((sub + 1) << (power - 6)) - 1;
}

void latency_histogram::record(std::chrono::microseconds latency) {
    const auto us = static_cast<std::uint64_t>(std::max<std::int64_t>(0, latency.count()));
    ++buckets_[index_of(us)];
    ++count_;
    max_ = std::max(max_, us);
    sum_ += us;
}

void latency_histogram::merge(const latency_histogram& other) {
    for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
    count_ += other.count_;
    max_ = std::max(max_, other.max_);
    sum_ += other.sum_;
}

std::chrono::microseconds latency_histogram::percentile(double fraction) const {
    if (count_ == 0) return std::chrono::microseconds(0);
    const auto rank = static_cast<std::uint64_t>(
        std::ceil(std::clamp(fraction, 0.0, 1.0) * static_cast<double>(count_)));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
        seen += buckets_[i];
        if (seen >= std::max<std::uint64_t>(rank, 1)) {
            // The last bucket also holds everything beyond it: its bound says nothing.
            if (i + 1 == buckets_.size()) return std::chrono::microseconds(max_);
            return std::chrono::microseconds(std::min(upper_bound_of(i), max_));
        }
    }
    return std::chrono::microseconds(max_);
}

double latency_histogram::mean_ms() const {
    return count_ ? static_cast<double>(sum_ / count_) / 1000.0 : 0.0;
}

}  // namespace callisto::load
