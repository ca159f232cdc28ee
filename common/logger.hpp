#pragma once
// A small logger passed into every library, so no library writes to std::cerr on its own
// and tests can capture or silence what a component says.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace callisto {

enum class log_level { debug, info, warn, error };
enum class log_format { text, json };

std::string_view to_string(log_level level);

// What a line is about, beyond its component: ("kernel_id", "…"), ("context_id", "…"),
// ("user", "…"), ("msg_id", "…"). Never a token, a key or code.
using log_fields = std::vector<std::pair<std::string, std::string>>;

class logger {
public:
    using sink = std::function<void(log_level, std::string_view component, const log_fields& fields,
                                    std::string_view text)>;

    logger();  // discards everything
    logger(sink out, log_level min_level);

    // Lines on stderr. text: "2026-11-21T10:00:00.000123Z LEVEL [component key=value] text";
    // json: one object per line, {"time", "level", "component", the fields..., "message"}.
    static logger to_stderr(log_level min_level, log_format format = log_format::text);

    // The same sink and level, tagged with another component name.
    logger component(std::string name) const;
    // The same, with one more field on every line.
    logger with(std::string key, std::string value) const;

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
    std::shared_ptr<const log_fields> fields_;
};

// One line as --log-format=json writes it (without the newline); public for tests.
std::string json_log_line(std::string_view time, log_level level, std::string_view component,
                          const log_fields& fields, std::string_view text);

}  // namespace callisto
