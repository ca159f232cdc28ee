#include "common/logger.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace callisto {

std::string_view to_string(log_level level) {
    switch (level) {
        case log_level::debug: return "DEBUG";
        case log_level::info: return "INFO";
        case log_level::warn: return "WARN";
        case log_level::error: return "ERROR";
    }
    return "?";
}

logger::logger() = default;

logger::logger(sink out, log_level min_level)
    : sink_(out ? std::make_shared<const sink>(std::move(out)) : nullptr), min_level_(min_level) {}

logger logger::to_stderr(log_level min_level) {
    static std::mutex write_mutex;
    return logger(
        [](log_level level, std::string_view component, std::string_view text) {
            using namespace std::chrono;
            auto now = system_clock::now();
            auto secs = time_point_cast<seconds>(now);
            auto micros = duration_cast<microseconds>(now - secs).count();
            std::time_t t = system_clock::to_time_t(secs);
            std::tm tm{};
            gmtime_r(&t, &tm);
            char stamp[64];  // roomy enough for any int the compiler imagines
            std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
                          tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                          tm.tm_sec, static_cast<long>(micros));
            std::lock_guard lock(write_mutex);
            std::fprintf(stderr, "%s %-5s [%.*s] %.*s\n", stamp, to_string(level).data(),
                         static_cast<int>(component.size()), component.data(),
                         static_cast<int>(text.size()), text.data());
        },
        min_level);
}

logger logger::component(std::string name) const {
    logger copy = *this;
    copy.component_ = std::move(name);
    return copy;
}

void logger::log(log_level level, std::string_view text) const {
    if (enabled(level)) (*sink_)(level, component_, text);
}

}  // namespace callisto
