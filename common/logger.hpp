#pragma once
// A small logger passed into every library, so no library writes to std::cerr on its own
// and tests can capture or silence what a component says.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace callisto {

enum class log_level { debug, info, warn, error };

std::string_view to_string(log_level level);

class logger {
public:
    using sink = std::function<void(log_level, std::string_view component, std::string_view text)>;

    logger();  // discards everything
    logger(sink out, log_level min_level);

    // Writes "2026-11-21T10:00:00.000123Z LEVEL [component] text" lines to stderr.
    static logger to_stderr(log_level min_level);

    // The same sink and level, tagged with another component name.
    logger component(std::string name) const;

    bool enabled(log_level level) const { return sink_ && level >= min_level_; }
    void log(log_level level, std::string_view text) const;
    void debug(std::string_view text) const { log(log_level::debug, text); }
    void info(std::string_view text) const { log(log_level::info, text); }
    void warn(std::string_view text) const { log(log_level::warn, text); }
    void error(std::string_view text) const { log(log_level::error, text); }

private:
    std::shared_ptr<const sink> sink_;
    log_level min_level_ = log_level::info;
    std::string component_;
};

}  // namespace callisto
