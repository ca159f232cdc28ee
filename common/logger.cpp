#include "common/logger.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace callisto {
namespace {

std::string now_iso() {
    using namespace std::chrono;
    auto now = system_clock::now();
    auto secs = time_point_cast<seconds>(now);
    auto micros = duration_cast<microseconds>(now - secs).count();
    std::time_t t = system_clock::to_time_t(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[64];  // roomy enough for any int the compiler imagines
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long>(micros));
    return stamp;
}

// A JSON string literal: quotes, backslashes and control characters escaped. Bytes that are
// not valid UTF-8 pass through; log text is ours or a kernel's error text, not binary.
void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return out;
}

}  // namespace

std::string_view to_string(log_level level) {
    switch (level) {
        case log_level::debug: return "DEBUG";
        case log_level::info: return "INFO";
        case log_level::warn: return "WARN";
        case log_level::error: return "ERROR";
    }
    return "?";
}

std::string json_log_line(std::string_view time, log_level level, std::string_view component,
                          const log_fields& fields, std::string_view text) {
    std::string out = "{\"time\":";
    append_json_string(out, time);
    out += ",\"level\":";
    append_json_string(out, lower(to_string(level)));
    out += ",\"component\":";
    append_json_string(out, component);
    for (const auto& [key, value] : fields) {
        out += ',';
        append_json_string(out, key);
        out += ':';
        append_json_string(out, value);
    }
    out += ",\"message\":";
    append_json_string(out, text);
    out += '}';
    return out;
}

logger::logger() = default;

logger::logger(sink out, log_level min_level)
    : sink_(out ? std::make_shared<const sink>(std::move(out)) : nullptr), min_level_(min_level) {}

logger logger::to_stderr(log_level min_level, log_format format) {
    static std::mutex write_mutex;
    return logger(
        [format](log_level level, std::string_view component, const log_fields& fields,
                 std::string_view text) {
            const std::string time = now_iso();
            std::string line;
            if (format == log_format::json) {
                line = json_log_line(time, level, component, fields, text);
            } else {
                std::string level_name(to_string(level));
                level_name.resize(5, ' ');  // "INFO " lines up with "ERROR"
                line = time + " " + level_name;
                line += " [" + std::string(component);
                for (const auto& [key, value] : fields) line += " " + key + "=" + value;
                line += "] ";
                line += text;
            }
            line += '\n';
            std::lock_guard lock(write_mutex);
            std::fwrite(line.data(), 1, line.size(), stderr);
        },
        min_level);
}

logger logger::component(std::string name) const {
    logger copy = *this;
    copy.component_ = std::move(name);
    return copy;
}

logger logger::with(std::string key, std::string value) const {
    logger copy = *this;
    auto fields = fields_ ? std::make_shared<log_fields>(*fields_) : std::make_shared<log_fields>();
    fields->emplace_back(std::move(key), std::move(value));
    copy.fields_ = std::move(fields);
    return copy;
}

void logger::log(log_level level, std::string_view text) const {
    static const log_fields none;
    if (enabled(level)) (*sink_)(level, component_, fields_ ? *fields_ : none, text);
}

}  // namespace callisto
