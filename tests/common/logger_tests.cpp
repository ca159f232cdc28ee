#include "common/logger.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace callisto;

namespace {
struct captured {
    struct line {
        log_level level;
        std::string component;
        log_fields fields;
        std::string text;
    };
    std::vector<line> lines;
    logger make(log_level min = log_level::debug) {
        return logger(
            [this](log_level l, std::string_view c, const log_fields& f, std::string_view t) {
                lines.push_back({l, std::string(c), f, std::string(t)});
            },
            min);
    }
};
}  // namespace

TEST_CASE("a logger tags lines with its component and fields, and drops those below its level") {
    captured out;
    auto base = out.make(log_level::info);
    auto kernel = base.component("kernel").with("kernel_id", "k-1");
    auto context = kernel.component("context").with("context_id", "c-1");
    kernel.info("started");
    kernel.debug("not shown");
    context.warn("slow");
    base.error("plain");
    REQUIRE(out.lines.size() == 3);
    CHECK(out.lines[0].component == "kernel");
    CHECK(out.lines[0].fields == log_fields{{"kernel_id", "k-1"}});
    CHECK(out.lines[1].fields == log_fields{{"kernel_id", "k-1"}, {"context_id", "c-1"}});
    CHECK(out.lines[1].level == log_level::warn);
    CHECK(out.lines[2].fields.empty());  // with() copies: the base logger has no fields
}

TEST_CASE("a JSON log line is one valid object with time, level, component, fields, message") {
    auto line = json_log_line("2026-11-24T10:00:00.000001Z", log_level::warn, "kernel",
                              {{"kernel_id", "k-1"}, {"user", "ana \"the admin\""}},
                              "line one\nline two\ttab \x01 and a backslash \\");
    CHECK(line.find('\n') == std::string::npos);
    auto j = nlohmann::json::parse(line);
    CHECK(j["time"] == "2026-11-24T10:00:00.000001Z");
    CHECK(j["level"] == "warn");
    CHECK(j["component"] == "kernel");
    CHECK(j["kernel_id"] == "k-1");
    CHECK(j["user"] == "ana \"the admin\"");
    CHECK(j["message"] == "line one\nline two\ttab \x01 and a backslash \\");
}
