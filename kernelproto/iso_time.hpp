#pragma once
// ISO 8601 timestamps as Jupyter writes and parses them: UTC, six fractional digits, "Z".
// jupyter_server's gateway client parses last_activity with "%Y-%m-%dT%H:%M:%S.%fZ".

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace callisto::kernelproto {

std::string format_iso_time(std::chrono::system_clock::time_point t);

// Accepts "YYYY-MM-DDTHH:MM:SS[.ffffff](Z|+00:00)"; nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> parse_iso_time(std::string_view text);

}  // namespace callisto::kernelproto
