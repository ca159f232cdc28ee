#include "gateway/server_config.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/byte_size.hpp"
#include "gateway/token_auth.hpp"
#include "kernelproto/ids.hpp"
#include "kernelproto/untrusted_json.hpp"

namespace callisto::gateway {
namespace {

template <class Int>
bool parse_int(const std::string& text, Int& out, Int min, Int max) {
    Int value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max)
        return false;
    out = value;
    return true;
}

// "32MiB", "1GiB", "512KiB", "1000" (bytes).
bool parse_size(const std::string& text, std::size_t& out) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    std::uint64_t value = 0;
    if (digits == 0 ||
        !parse_int(text.substr(0, digits), value, std::uint64_t{1}, std::uint64_t{1} << 40))
        return false;
    std::string unit = text.substr(digits);
    std::uint64_t scale = unit.empty() || unit == "B" ? 1
                          : unit == "KiB"             ? 1u << 10
                          : unit == "MiB"             ? 1u << 20
                          : unit == "GiB"             ? 1u << 30
                                                      : 0;
    if (scale == 0) return false;
    out = static_cast<std::size_t>(value * scale);
    return true;
}

// A size, or "0" for no limit; a limit below 1KiB would cut everything and is refused.
bool parse_limit(const std::string& text, std::size_t& out) {
    if (text == "0") {
        out = 0;
        return true;
    }
    return parse_size(text, out) && out >= 1024;
}

bool parse_log_level(const std::string& text, log_level& out) {
    if (text == "debug")
        out = log_level::debug;
    else if (text == "info")
        out = log_level::info;
    else if (text == "warn")
        out = log_level::warn;
    else if (text == "error")
        out = log_level::error;
    else
        return false;
    return true;
}

// As --log-level takes it (the logger prints upper case).
const char* log_level_name(log_level level) {
    switch (level) {
        case log_level::debug: return "debug";
        case log_level::info: return "info";
        case log_level::warn: return "warn";
        case log_level::error: return "error";
    }
    return "info";
}

bool valid_token(const std::string& token) {
    if (token.size() < 8 || token.size() > 512) return false;
    for (char c : token)
        if (c <= ' ' || c > '~') return false;
    return true;
}

// What a parse carries besides the configuration.
struct parse_state {
    explicit parse_state(server_config& c) : cfg(c) {}
    server_config& cfg;
    bool token_given = false;
    std::optional<parse_result> exit_now;  // --help and --hash-token answer and exit
    std::string config_file;               // --config
    bool print_config = false;             // --print-config
};

// Applies one option's value; returns "" or what a valid value looks like ("a number 1-64").
using apply_fn = std::function<std::string(const std::string& value, parse_state& st)>;
// The option's effective value as --print-config shows it, in a form a --config file takes
// back. Empty for actions (--help, --config), which are neither shown nor read from a file.
using show_fn = std::function<nlohmann::json(const server_config& c)>;

struct option_io {
    apply_fn apply;
    show_fn show;
};

// One option: what --help says of it, how its value is read and shown. The usage text, the
// parsers of flags, --config files and CALLISTO_* variables, and --print-config are all made
// from this one table, so they cannot drift apart.
struct option {
    const char* name;        // "--port"
    const char* value_name;  // "N"; nullptr for a switch, which takes no value
    const char* help;        // '\n' separates the lines --help prints under each other
    option_io io;
    bool repeatable = false;  // a list: each use adds one value
};

// An option nobody set shows as null, which a --config file reads as "not set".
nlohmann::json unset_if_empty(const std::string& text) {
    return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

template <class Duration>
nlohmann::json whole_seconds(Duration d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

// Whole seconds into a duration field (seconds or milliseconds), within [min, max].
template <class Duration>
option_io seconds_into(Duration server_config::*field, int min, int max, std::string expected) {
    return {[=](const std::string& value, parse_state& st) -> std::string {
                int secs = 0;
                if (!parse_int(value, secs, min, max)) return expected;
                st.cfg.*field = std::chrono::seconds(secs);
                return {};
            },
            [=](const server_config& c) { return whole_seconds(c.*field); }};
}

// A whole number into a field, within [min, max].
option_io number_into(std::size_t server_config::*field, std::size_t min, std::size_t max,
                      std::string expected) {
    return {[=](const std::string& value, parse_state& st) -> std::string {
                if (!parse_int(value, st.cfg.*field, min, max)) return expected;
                return {};
            },
            [=](const server_config& c) { return nlohmann::json(c.*field); }};
}

// A size ("32MiB") into a field.
option_io size_into(std::size_t server_config::*field, std::string expected) {
    return {[=](const std::string& value, parse_state& st) -> std::string {
                if (!parse_size(value, st.cfg.*field)) return expected;
                return {};
            },
            [=](const server_config& c) { return nlohmann::json(format_size(c.*field)); }};
}

// A size of at least 1KiB, or 0 for no limit, into a field.
option_io limit_into(std::size_t server_config::*field, std::string expected) {
    return {[=](const std::string& value, parse_state& st) -> std::string {
                if (!parse_limit(value, st.cfg.*field)) return expected;
                return {};
            },
            [=](const server_config& c) { return nlohmann::json(format_size(c.*field)); }};
}

// A file path into a field; unset (shown as null) when not given.
option_io path_into(std::filesystem::path server_config::*field, std::string expected) {
    return {[=](const std::string& value, parse_state& st) -> std::string {
                if (value.empty()) return expected;
                st.cfg.*field = value;
                return {};
            },
            [=](const server_config& c) { return unset_if_empty((c.*field).string()); }};
}

// "on" or "off" into a flag.
option_io switch_into(bool server_config::*field) {
    return {[=](const std::string& value, parse_state& st) -> std::string {
                if (value != "on" && value != "off") return "on or off";
                st.cfg.*field = value == "on";
                return {};
            },
            [=](const server_config& c) { return nlohmann::json(c.*field ? "on" : "off"); }};
}

// Seconds into one of the culling policy's durations; min 0 means 0 disables the rule.
option_io culling_seconds(std::chrono::seconds kernels::culling_policy::*field, int min) {
    return {[field, min](const std::string& value, parse_state& st) -> std::string {
                int secs = 0;
                if (!parse_int(value, secs, min, 366 * 24 * 3600))
                    return min > 0 ? "seconds from 1" : "seconds (0 disables)";
                st.cfg.culling.*field = std::chrono::seconds(secs);
                return {};
            },
            [field](const server_config& c) { return whole_seconds(c.culling.*field); }};
}

// A size into one of the kernels' sandbox limits.
option_io kernel_limit_size(std::uint64_t launcher::sandbox_policy::*field) {
    return {
        [field](const std::string& value, parse_state& st) -> std::string {
            std::uint64_t bytes = 0;
            if (!launcher::parse_byte_size(value, bytes)) return "a size like 2GiB";
            st.cfg.limits.*field = bytes;
            return {};
        },
        [field](const server_config& c) { return nlohmann::json(format_size(c.limits.*field)); }};
}

const std::vector<option>& options() {
    static const std::vector<option> table = {
        {"--ip",
         "ADDR",
         "address to listen on (default 127.0.0.1)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              // "localhost" is what people type; the listener wants an address.
              const std::string ip = value == "localhost" ? "127.0.0.1" : value;
              unsigned char scratch[sizeof(in6_addr)];
              if (::inet_pton(AF_INET, ip.c_str(), scratch) != 1 &&
                  ::inet_pton(AF_INET6, ip.c_str(), scratch) != 1)
                  return "an IP address such as 127.0.0.1, 0.0.0.0 or ::1 (or localhost)";
              c.ip = ip;
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.ip); }}},
        {"--port",
         "N",
         "port to listen on (default 8888; 0 picks a free port)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_int(value, c.port, std::uint16_t{0}, std::uint16_t{65535}))
                  return "a port number 0-65535";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.port); }}},
        {"--token",
         "T",
         "API token (default: $CALLISTO_TOKEN, else a random one, printed)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!valid_token(value)) return "8-512 printable characters without spaces";
              c.token = value;
              st.token_given = true;
              return {};
          },
          // Never shown (effective_config leaves secrets out); a shower, so that a --config
          // file and CALLISTO_TOKEN may set it.
          [](const server_config&) { return nlohmann::json(nullptr); }}},
        {"--no-auth",
         nullptr,
         "serve without a token (development only)",
         {[](const std::string&, parse_state& st) -> std::string {
              st.cfg.auth_enabled = false;
              return {};
          },
          [](const server_config& c) { return nlohmann::json(!c.auth_enabled); }}},
        {"--threads",
         "N",
         "I/O threads (default 2)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_int(value, c.threads, 1, 64)) return "a number 1-64";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.threads); }}},
        {"--kernel-dir",
         "DIR",
         "a directory of kernelspecs, searched before the standard\n"
         "Jupyter paths (repeatable)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (value.empty()) return "a directory";
              c.kernel_dirs.emplace_back(value);
              return {};
          },
          [](const server_config& c) {
              auto dirs = nlohmann::json::array();
              for (const auto& d : c.kernel_dirs) dirs.push_back(d.string());
              return dirs;
          }},
         true},
        {"--default-kernel",
         "NAME",
         "kernelspec used when a request names none (default python3\n"
         "when installed, else the first one found)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (value.empty()) return "a kernelspec name";
              c.default_kernel = value;
              return {};
          },
          [](const server_config& c) { return unset_if_empty(c.default_kernel); }}},
        {"--runtime-dir",
         "DIR",
         "connection files and ipc sockets (default /tmp/callisto-<pid>)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (value.empty() || value.size() > 60) return "a directory path of 1-60 characters";
              c.runtime_root = value;
              return {};
          },
          [](const server_config& c) { return unset_if_empty(c.runtime_root.string()); }}},
        {"--transport",
         "ipc|tcp",
         "how the gateway talks to kernels (default ipc)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (value != "ipc" && value != "tcp") return "ipc or tcp";
              c.ipc_transport = value == "ipc";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.ipc_transport ? "ipc" : "tcp"); }}},
        {"--web-root",
         "DIR|off",
         "serve a static web UI from DIR at / (default: the first of\n"
         "<binary dir>/../share/callisto/web, <binary dir>/web, the source\n"
         "tree's web/ for a binary of its build tree, and the install\n"
         "prefix's share/callisto/web that has an index.html); off: none",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (value.empty()) return "a directory, or off";
              c.web_root_off = value == "off";
              c.web_root = c.web_root_off ? std::filesystem::path() : std::filesystem::path(value);
              return {};
          },
          [](const server_config& c) -> nlohmann::json {
              if (c.web_root_off) return "off";
              return unset_if_empty(c.web_root.string());
          }}},
        {"--max-message-size", "SIZE", "largest WebSocket message from a client (default 32MiB)",
         size_into(&server_config::max_message_bytes, "a size like 32MiB")},
        {"--client-queue", "SIZE",
         "per-WebSocket send queue before the client is dropped (default 256MiB)",
         size_into(&server_config::client_send_queue_bytes, "a size like 256MiB")},
        {"--replay-buffer", "SIZE",
         "per-kernel iopub output kept for clients reconnecting with\n"
         "?since=SEQ (default 8MiB)",
         size_into(&server_config::replay_buffer_bytes, "a size like 8MiB")},
        {"--client-input-queue", "SIZE",
         "per WebSocket, the bytes of its messages waiting for a kernel\n"
         "that is not reading; past it messages are refused with an error\n"
         "(default 64MiB; 0: no limit)",
         limit_into(&server_config::client_input_queue_bytes,
                    "a size like 64MiB, at least 1KiB, or 0 for no limit")},
        {"--kernel-buffer", "SIZE",
         "per kernel, the bytes of its messages the gateway holds (queued,\n"
         "being relayed, kept for replay); past it the kernel's large\n"
         "messages are dropped and its clients told (default 128MiB; 0: none)",
         limit_into(&server_config::kernel_buffer_bytes,
                    "a size like 128MiB, at least 1KiB, or 0 for no limit")},
        {"--kernel-message-limit",
         "SIZE",
         "largest message part a kernel may send (16MiB at most for replies);\n"
         "a larger one is dropped, the connection made again, and a request\n"
         "whose reply it was answered with an error (default 64MiB)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_size(value, c.kernel_message_limit_bytes) ||
                  c.kernel_message_limit_bytes < (64u << 10))
                  return "a size like 64MiB, at least 64KiB";
              return {};
          },
          [](const server_config& c) {
              return nlohmann::json(format_size(c.kernel_message_limit_bytes));
          }}},
        {"--ws-output-limit", "SIZE",
         "per execution, the stdout/stderr bytes sent to Jupyter WebSocket\n"
         "clients; the rest is dropped with a notice; half of it for an\n"
         "error's value and for its traceback (default 8MiB; 0: none)",
         limit_into(&server_config::ws_output_limit_bytes,
                    "a size like 8MiB, at least 1KiB, or 0 for no limit")},
        {"--ws-rich-output-limit", "SIZE",
         "the same for display data and results (default 64MiB; 0: none)",
         limit_into(&server_config::ws_rich_output_limit_bytes,
                    "a size like 64MiB, at least 1KiB, or 0 for no limit")},
        {"--ws-ping-interval", "SECS",
         "a WebSocket client silent this long is sent a ping (default 30)",
         seconds_into(&server_config::ws_ping_interval, 1, 3600, "seconds 1-3600")},
        {"--ws-ping-timeout", "SECS",
         "a WebSocket client silent this long, pings unanswered, is closed\n"
         "and the reason logged; while the host is past its capacity up to\n"
         "ten times this (default 90)",
         seconds_into(&server_config::ws_ping_timeout, 1, 36000, "seconds 1-36000")},
        {"--max-connections", "N", "open client connections in all (default 10000; 0: no limit)",
         number_into(&server_config::max_connections, 0, 1000000, "a number 0-1000000")},
        {"--max-connections-per-address", "N",
         "open connections from one client address (default 1000;\n"
         "0: no limit; behind a proxy every client has the proxy's address)",
         number_into(&server_config::max_connections_per_address, 0, 1000000,
                     "a number 0-1000000")},
        {"--header-timeout", "SECS",
         "a new connection must send its first request header within this\n"
         "(default 10)",
         seconds_into(&server_config::header_timeout, 1, 3600, "seconds 1-3600")},
        {"--max-body-in-flight", "SIZE",
         "bodies held for connections, all together and both ways: request\n"
         "bodies being received or handled, answers over 64KiB being sent,\n"
         "64KiB per file download; past it a request, an answer or a\n"
         "download is refused 503 with Retry-After (default 256MiB; 0: no\n"
         "limit)",
         limit_into(&server_config::max_body_bytes_in_flight,
                    "a size like 256MiB, at least 1KiB, or 0 for no limit")},
        {"--kernel-ready-timeout", "SECS", "kernel start to first reply (default 60)",
         seconds_into(&server_config::kernel_ready_timeout, 1, 3600, "seconds 1-3600")},
        {"--drain-seconds", "SECS",
         "at SIGTERM, answer /readyz 503 this long first (a load balancer\n"
         "then sends new users elsewhere), then stop; a second SIGTERM\n"
         "stops at once (default 0)",
         seconds_into(&server_config::drain_seconds, 0, 3600, "seconds 0-3600")},
        {"--shed-load", "on|off",
         "when the host is past its capacity (the CPU contended, and a long\n"
         "run queue, the gateway's event loop late or kernels' heartbeats\n"
         "missing), refuse new kernels, contexts and one-shot executions\n"
         "503 with Retry-After so the work already running keeps its pace\n"
         "(default on)",
         switch_into(&server_config::shed_load)},
        {"--shed-cpu-pressure", "PCT",
         "CPU pressure (Linux PSI, /proc/pressure/cpu \"some avg10\") at\n"
         "which the CPU counts as contended (default 90)",
         number_into(&server_config::shed_cpu_pressure, 1, 100, "a percentage 1-100")},
        {"--shed-run-queue", "N",
         "tasks ready to run per CPU (/proc/loadavg) at which new work would\n"
         "wait too long, with the CPU contended (default 4)",
         number_into(&server_config::shed_run_queue, 1, 1000, "a number 1-1000")},
        {"--shed-lag", "MS",
         "how late the gateway's event loop may run before its work counts\n"
         "as suffering (default 250)",
         number_into(&server_config::shed_lag_ms, 10, 60000, "milliseconds 10-60000")},
        {"--shutdown-wait", "SECS", "shutdown_request to SIGTERM (default 5)",
         seconds_into(&server_config::shutdown_wait, 0, 600, "seconds 0-600")},
        {"--certfile", "FILE",
         "serve HTTPS and WSS with this PEM certificate chain (with\n"
         "--keyfile; TLS 1.2 at least; SIGHUP reloads both) (default: none)",
         path_into(&server_config::certfile, "a file path")},
        {"--keyfile", "FILE", "the PEM private key of --certfile",
         path_into(&server_config::keyfile, "a file path")},
        {"--client-ca", "FILE",
         "mutual TLS: accept only clients with a certificate from this\n"
         "PEM CA (with --certfile) (default: none)",
         path_into(&server_config::client_ca, "a file path")},
        {"--users", "FILE",
         "users, roles and kernel quotas (JSON; replaces --token):\n"
         "[{\"name\": \"ana\", \"token_sha256\": \"…\", \"role\": \"user\",\n"
         "  \"max_kernels\": 4}, …]",
         path_into(&server_config::users_file, "a users file")},
        {"--hash-token",
         "T",
         "print the token_sha256 of T for a users file, and exit; T '-'\n"
         "reads it from the first line of standard input (not shown by ps)",
         {[](const std::string& value, parse_state& st) -> std::string {
              std::string token = value;
              if (value == "-") {
                  std::getline(std::cin, token);
                  if (!token.empty() && token.back() == '\r') token.pop_back();
              }
              if (!valid_token(token)) return "8-512 printable characters without spaces";
              st.exit_now = parse_result{std::nullopt, token_auth::token_sha256(token), 0};
              return {};
          },
          nullptr}},
        {"--max-kernels", "N", "kernels of all users together (default 0: no limit)",
         number_into(&server_config::max_kernels, 0, 100000, "a number 0-100000")},
        {"--pool-size", "N", "pre-started kernels of the default kernelspec (default 1; 0: none)",
         number_into(&server_config::default_pool_size, 0, 64, "a number 0-64")},
        {"--pool",
         "NAME:N",
         "pre-started kernels of kernelspec NAME (repeatable)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              const auto colon = value.rfind(':');
              std::size_t size = 0;
              if (colon == std::string::npos || colon == 0 ||
                  !parse_int(value.substr(colon + 1), size, std::size_t{0}, std::size_t{64}))
                  return "NAME:N with N 0-64";
              c.pool_sizes[value.substr(0, colon)] = size;
              return {};
          },
          [](const server_config& c) {
              auto pools = nlohmann::json::array();
              for (const auto& [name, n] : c.pool_sizes)
                  pools.push_back(name + ":" + std::to_string(n));
              return pools;
          }},
         true},
        {"--kernel-policy",
         "reuse|fresh",
         "what a context or one-shot execution that names no policy\n"
         "gets (default reuse): reuse keeps a finished context's kernel,\n"
         "reset, for its owner's next one; fresh always starts from a kernel\n"
         "no one used and destroys it afterwards",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              auto policy = kernels::parse_kernel_policy(value);
              if (!policy) return "reuse or fresh";
              c.default_policy = *policy;
              return {};
          },
          [](const server_config& c) {
              return nlohmann::json(std::string(kernels::to_string(c.default_policy)));
          }}},
        {"--recycle-max-uses",
         "N",
         "contexts or one-shot runs one kernel serves under reuse\n"
         "(default 20; 0: no limit)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_int(value, c.reuse.limits.max_uses, std::size_t{0}, std::size_t{1000000}))
                  return "a number 0-1000000";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.reuse.limits.max_uses); }}},
        {"--recycle-max-lifetime",
         "SECS",
         "a kernel older than this is not reused (default 3600; 0: any)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              int secs = 0;
              if (!parse_int(value, secs, 0, 366 * 24 * 3600)) return "seconds (0: any age)";
              c.reuse.limits.max_lifetime = std::chrono::seconds(secs);
              return {};
          },
          [](const server_config& c) {
              return nlohmann::json(whole_seconds(c.reuse.limits.max_lifetime));
          }}},
        {"--kept-kernels",
         "N",
         "reset kernels kept per user for reuse (default 2; 0: none)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_int(value, c.reuse.kept_per_user, std::size_t{0}, std::size_t{64}))
                  return "a number 0-64";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.reuse.kept_per_user); }}},
        {"--autorestart-limit", "N",
         "automatic restarts after a kernel dies, per window (default 3;\n"
         "0: a dead kernel stays dead)",
         number_into(&server_config::autorestart_limit, 0, 1000, "a number 0-1000")},
        {"--autorestart-window", "SECS", "the window for --autorestart-limit (default 60)",
         seconds_into(&server_config::autorestart_window, 1, 24 * 3600, "seconds 1-86400")},
        {"--heartbeat-timeout", "SECS",
         "a kernel that answers no heartbeat this long is frozen (stopped,\n"
         "deadlocked): it is killed and restarted per --autorestart-limit\n"
         "(default 30; 0: never)",
         seconds_into(&server_config::heartbeat_timeout, 0, 24 * 3600, "seconds 0-86400")},
        {"--cull-idle-timeout", "SECS", "shut down kernels idle this long (default 0: never)",
         culling_seconds(&kernels::culling_policy::idle_timeout, 0)},
        {"--cull-busy-timeout", "SECS", "shut down kernels busy this long (default 0: never)",
         culling_seconds(&kernels::culling_policy::busy_timeout, 0)},
        {"--kernel-max-lifetime", "SECS",
         "shut down kernels this old, whatever they do (default 0: never)",
         culling_seconds(&kernels::culling_policy::max_lifetime, 0)},
        {"--cull-connected",
         nullptr,
         "cull kernels even while clients are connected",
         {[](const std::string&, parse_state& st) -> std::string {
              st.cfg.culling.cull_connected = true;
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.culling.cull_connected); }}},
        {"--cull-interval", "SECS", "how often the culling rules are checked (default 60)",
         culling_seconds(&kernels::culling_policy::interval, 1)},
        {"--culled-retention", "SECS",
         "how long a culled kernel's id answers 410 Gone (default 3600)",
         culling_seconds(&kernels::culling_policy::retention, 0)},
        {"--sandbox", "on|off",
         "run kernels in the sandbox (default on; off is for development\n"
         "only: kernel code then runs as the gateway's user)",
         switch_into(&server_config::sandbox)},
        {"--zygote", "on|off",
         "fork Python kernels from a zygote per kernelspec that has\n"
         "imported ipykernel and the data stack (default on); off: every\n"
         "kernel starts its own interpreter",
         switch_into(&server_config::zygote)},
        {"--state-dir",
         "DIR|off",
         "where kernel records are kept so that kernels outlive a gateway\n"
         "crash or upgrade and the next start adopts them (default\n"
         "<workdir-root>/.callisto-state; off with --sandbox=off); off:\n"
         "kernels die with the gateway",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (value == "off") {
                  c.state_dir_off = true;
                  c.state_dir.clear();
                  return {};
              }
              if (value.empty() || value.front() != '/') return "an absolute directory path or off";
              c.state_dir_off = false;
              c.state_dir = value;
              return {};
          },
          [](const server_config& c) -> nlohmann::json {
              if (c.state_dir_off) return "off";
              return unset_if_empty(c.state_dir.string());
          }}},
        {"--keep-kernels-on-exit", "on|off",
         "SIGTERM leaves the kernels running for the next start to adopt\n"
         "(needs --state-dir), as SIGUSR2 does; default off: SIGTERM stops them",
         switch_into(&server_config::keep_kernels_on_exit)},
        {"--state-required", "on|off",
         "refuse to start a kernel whose record cannot be written to\n"
         "--state-dir (a full disk): it would not survive a restart; default\n"
         "off: it runs without, and the error is logged and counted",
         switch_into(&server_config::state_required)},
        {"--workdir-root",
         "DIR",
         "per-kernel working directories (default /var/lib/callisto/work);\n"
         "one instance per root: it is locked, and what a crashed instance\n"
         "left there is reaped at start",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (value.empty() || value.front() != '/') return "an absolute directory path";
              c.workdir_root = value;
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.workdir_root.string()); }}},
        {"--sandbox-uids",
         "FIRST-LAST",
         "uids (and gids) given to sessions (default 60000-60999); give\n"
         "each instance on a host its own range",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              const auto dash = value.find('-');
              std::uint32_t first = 0, last = 0;
              if (dash == std::string::npos ||
                  !parse_int(value.substr(0, dash), first, std::uint32_t{1000},
                             std::uint32_t{1u << 30}) ||
                  !parse_int(value.substr(dash + 1), last, first, std::uint32_t{1u << 30}))
                  return "a range FIRST-LAST of uids from 1000 up";
              c.sandbox_uid_first = first;
              c.sandbox_uid_count = last - first + 1;
              return {};
          },
          [](const server_config& c) {
              return nlohmann::json(std::to_string(c.sandbox_uid_first) + "-" +
                                    std::to_string(c.sandbox_uid_first + c.sandbox_uid_count - 1));
          }}},
        {"--memory-limit", "SIZE", "per kernel (default 2GiB)",
         kernel_limit_size(&launcher::sandbox_policy::memory_bytes)},
        {"--pids-limit",
         "N",
         "processes and threads per kernel (default 256)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_int(value, c.limits.pids, std::uint64_t{8}, std::uint64_t{1u << 22}))
                  return "a number 8-4194304";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.limits.pids); }}},
        {"--cpu-limit",
         "CORES",
         "CPU share per kernel, e.g. 0.5 (default 1)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              char* end = nullptr;
              const double cores = std::strtod(value.c_str(), &end);
              if (value.empty() || end != value.c_str() + value.size() || !(cores >= 0.01) ||
                  cores > 1024)
                  return "cores 0.01-1024";
              c.limits.cpu_cores = cores;
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.limits.cpu_cores); }}},
        {"--cpu-time-limit",
         "SECS",
         "CPU seconds per kernel process (default 600)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_int(value, c.limits.cpu_time_seconds, std::uint64_t{1},
                             std::uint64_t{1u << 30}))
                  return "seconds from 1";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.limits.cpu_time_seconds); }}},
        {"--file-size-limit", "SIZE", "largest file a kernel may write (default 1GiB)",
         kernel_limit_size(&launcher::sandbox_policy::file_size_bytes)},
        {"--open-files-limit",
         "N",
         "open files per kernel process (default 1024)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_int(value, c.limits.open_files, std::uint64_t{64},
                             std::uint64_t{1u << 20}))
                  return "a number 64-1048576";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.limits.open_files); }}},
        {"--disk-quota", "SIZE", "total size of a kernel's working directory (default 1GiB)",
         kernel_limit_size(&launcher::sandbox_policy::disk_bytes)},
        {"--tmp-size", "SIZE", "size of the kernel's /tmp and /dev/shm (default 256MiB)",
         kernel_limit_size(&launcher::sandbox_policy::tmp_bytes)},
        {"--output-budget",
         "SIZE",
         "per execution and stream, the text kept (head and tail, with a\n"
         "marker for the cut); so much too of an error's value and of its\n"
         "traceback (default 1MiB)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_size(value, c.output_budget_bytes) || c.output_budget_bytes < 1024)
                  return "a size like 1MiB, at least 1KiB";
              return {};
          },
          [](const server_config& c) {
              return nlohmann::json(format_size(c.output_budget_bytes));
          }}},
        {"--result-cap",
         "SIZE",
         "largest rich result (one MIME value) returned inline; larger ones\n"
         "go to a file in the context's workdir (default 5MiB)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_size(value, c.result_cap_bytes) || c.result_cap_bytes < 1024)
                  return "a size like 5MiB, at least 1KiB";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(format_size(c.result_cap_bytes)); }}},
        {"--execution-queue", "N", "executions waiting per context before 429 (default 16)",
         number_into(&server_config::execution_queue, 1, 1024, "a number 1-1024")},
        {"--interrupt-grace", "SECS",
         "after a deadline's interrupt, wait this long before restarting\n"
         "the kernel (default 5)",
         seconds_into(&server_config::interrupt_grace, 0, 600, "seconds 0-600")},
        {"--execution-timeout", "SECS",
         "the deadline of a /v1 execution that names no timeout (at it: the\n"
         "interrupt, then after --interrupt-grace a restart) (default 600; 0: none)",
         seconds_into(&server_config::execution_timeout, 0, 7 * 24 * 3600, "seconds 0-604800")},
        {"--max-execution-timeout", "SECS",
         "the longest timeout a /v1 execution may ask for; MCP's run_code\n"
         "keeps its own 120 s default and 3600 s maximum within it (default 86400)",
         seconds_into(&server_config::max_execution_timeout, 1, 7 * 24 * 3600, "seconds 1-604800")},
        {"--upload-limit", "SIZE", "largest file upload to a context (default 100MiB)",
         size_into(&server_config::upload_limit_bytes, "a size like 100MiB")},
        {"--mcp-session-timeout", "SECS",
         "an MCP session idle this long ends and its context is deleted\n"
         "(default 3600; 0: never)",
         seconds_into(&server_config::mcp_session_timeout, 0, 7 * 24 * 3600, "seconds 0-604800")},
        {"--mcp-max-sessions", "N",
         "MCP sessions per user; initialize beyond it answers 429 (default 64)",
         number_into(&server_config::mcp_max_sessions, 1, 10000, "a number 1-10000")},
        {"--audit-log", "FILE",
         "record every execution (Jupyter WebSocket, /v1 and MCP) in FILE\n"
         "before it runs, and how it ended: user, kernel, code, status,\n"
         "duration, output; lines chained under a key (--audit-key);\n"
         "`callisto audit-verify --key KEY FILE...` checks them (default:\n"
         "none)",
         path_into(&server_config::audit_log, "a file path")},
        {"--audit-key", "FILE",
         "the audit chain's secret key, created (0600) when missing; its\n"
         "anchor (the last line written) is kept beside it as NAME.anchor.\n"
         "Keep it where the log's readers cannot read it (default:\n"
         "<state-dir>/audit.key)",
         path_into(&server_config::audit_key, "a file path")},
        {"--audit-code",
         "full|hash",
         "record the code itself, or only its sha256 and size (default full)",
         {[](const std::string& value, parse_state& st) -> std::string {
              if (value != "full" && value != "hash") return "full or hash";
              st.cfg.audit_code = value == "full";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.audit_code ? "full" : "hash"); }}},
        {"--audit-code-limit", "SIZE",
         "code (or user expressions) longer than this is recorded by its\n"
         "sha256 and size only, even with --audit-code=full (default 64KiB)",
         size_into(&server_config::audit_code_limit, "a size like 64KiB")},
        {"--audit-rotate", "SIZE",
         "start a new audit file past this size (FILE.1 is the newest old\n"
         "one; the chain continues) (default 0: never)",
         limit_into(&server_config::audit_rotate_bytes,
                    "a size like 100MiB, at least 1KiB, or 0 for never")},
        {"--audit-keep", "N", "rotated audit files kept (default 0: all)",
         number_into(&server_config::audit_keep, 0, 100000, "a number 0-100000")},
        {"--audit-required", "on|off",
         "refuse executions that cannot be recorded (unwritable file, full\n"
         "disk) rather than run them unrecorded (default on)",
         switch_into(&server_config::audit_required)},
        {"--metrics-public",
         nullptr,
         "serve GET /metrics without a token (for a scraper on a private\n"
         "network; by default it needs an admin's token)",
         {[](const std::string&, parse_state& st) -> std::string {
              st.cfg.metrics_public = true;
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.metrics_public); }}},
        {"--log-level",
         "LEVEL",
         "debug, info, warn, error (default info)",
         {[](const std::string& value, parse_state& st) -> std::string {
              auto& c = st.cfg;
              if (!parse_log_level(value, c.log)) return "debug, info, warn or error";
              return {};
          },
          [](const server_config& c) { return nlohmann::json(log_level_name(c.log)); }}},
        {"--log-format",
         "text|json",
         "log lines as text, or as one JSON object per line with time,\n"
         "level, component, kernel_id, context_id, user where they apply\n"
         "(default text)",
         {[](const std::string& value, parse_state& st) -> std::string {
              if (value != "text" && value != "json") return "text or json";
              st.cfg.log_format = value == "json" ? log_format::json : log_format::text;
              return {};
          },
          [](const server_config& c) {
              return nlohmann::json(c.log_format == log_format::json ? "json" : "text");
          }}},
        {"--version",
         nullptr,
         "print the version and exit",
         {[](const std::string&, parse_state& st) -> std::string {
              st.exit_now =
                  parse_result{std::nullopt, std::string("callisto ") + CALLISTO_VERSION, 0};
              return {};
          },
          nullptr}},
        {"--config",
         "FILE",
         "read options from a JSON file: {\"port\": 8888, \"pool\": [\"python3:2\"],\n"
         "\"no-auth\": false, ...}, keys being the option names; then\n"
         "CALLISTO_<OPTION> variables (CALLISTO_MAX_KERNELS=10; lists\n"
         "comma-separated), then flags; the last source wins",
         {[](const std::string& value, parse_state& st) -> std::string {
              if (value.empty()) return "a JSON file";
              st.config_file = value;
              return {};
          },
          nullptr}},
        {"--print-config",
         nullptr,
         "print the effective configuration as JSON, a valid --config file,\n"
         "and exit; the token is left out (set it apart: $CALLISTO_TOKEN)",
         {[](const std::string&, parse_state& st) -> std::string {
              st.print_config = true;
              return {};
          },
          nullptr}},
        {"--help",
         nullptr,
         "this text",
         {[](const std::string&, parse_state& st) -> std::string {
              st.exit_now = parse_result{std::nullopt, usage_text(), 0};
              return {};
          },
          nullptr}},
    };
    return table;
}

const option* find_option(std::string_view name) {
    for (const auto& o : options())
        if (name == o.name) return &o;
    return nullptr;
}

}  // namespace

std::string usage_text() {
    constexpr std::size_t help_column = 28;
    std::string out =
        "Usage: callisto [options]\n\nServes the Jupyter Kernel Gateway REST and WebSocket API "
        "over real ipykernels.\n\n";
    for (const auto& o : options()) {
        std::string flag = std::string("  ") + o.name;
        if (o.value_name) flag += std::string("=") + o.value_name;
        flag.append(flag.size() + 2 <= help_column ? help_column - flag.size() : 2, ' ');
        std::string_view help = o.help;
        for (bool first = true; !help.empty() || first; first = false) {
            const auto nl = help.find('\n');
            out += (first ? flag : std::string(help_column, ' ')) +
                   std::string(help.substr(0, nl)) + "\n";
            help = nl == std::string_view::npos ? std::string_view{} : help.substr(nl + 1);
        }
    }
    return out + R"(
Sizes take B, KiB, MiB or GiB. A kernelspec may override the limits in kernel.json:
"metadata": {"callisto": {"limits": {"memory": "4GiB", "pids": 512, "cpu": 2, "cpu_time": 60,
"file_size": "1GiB", "open_files": 1024, "disk": "2GiB", "tmp": "256MiB"}}}
)";
}

namespace {

// One value given to one option, and where it came from: "--port", "CALLISTO_PORT" or
// "port in /etc/callisto.json". An error names it, so people know what to fix where.
struct setting {
    const option* opt;
    std::string value;
    std::string source;
};

bool secret(const option& o) { return std::string_view(o.name) == "--token"; }

std::string invalid(const setting& s, const std::string& expected) {
    const std::string shown = secret(*s.opt) ? "<hidden>" : s.value;
    return "invalid value '" + shown + "' for " + s.source + ": expected " + expected;
}

// "--max-kernels" <-> "CALLISTO_MAX_KERNELS".
std::string env_name(const option& o) {
    std::string out = "CALLISTO_";
    for (const char* p = o.name + 2; *p; ++p) out += *p == '-' ? '_' : static_cast<char>(*p - 32);
    return out;
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

// A --config file: a JSON object whose keys are option names without "--". Switches take
// true or false, lists take arrays; everything else a string or a number.
std::string read_config_file(const std::string& path, std::vector<setting>& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot read config file " + path + ": " + std::strerror(errno);
    std::ostringstream content;
    content << in.rdbuf();
    auto parsed = kernelproto::parse_untrusted_json(content.str());
    if (!parsed.ok()) return "config file " + path + " is " + parsed.problem();
    const nlohmann::json& doc = parsed.value;
    if (!doc.is_object())
        return "config file " + path + " must hold a JSON object of option names and values";
    for (const auto& [key, value] : doc.items()) {
        const option* o = find_option("--" + key);
        const std::string source = key + " in " + path;
        if (!o) return "unknown option '" + key + "' in config file " + path + " (see --help)";
        if (!o->io.show) return key + " cannot be set in a config file";
        if (value.is_null()) continue;  // as --print-config shows an unset option
        auto one = [&](const nlohmann::json& v, std::string& text) -> bool {
            if (v.is_string())
                text = v.get<std::string>();
            else if (v.is_number_integer() || v.is_number_unsigned())
                text = v.dump();
            else if (v.is_number_float())
                text = v.dump();
            else
                return false;
            return true;
        };
        if (!o->value_name) {
            if (!value.is_boolean()) return source + " must be true or false";
            if (value.get<bool>()) out.push_back({o, "", source});
            continue;
        }
        if (value.is_array() && o->repeatable) {
            for (const auto& v : value) {
                std::string text;
                if (!one(v, text)) return source + ": each value must be a string";
                out.push_back({o, text, source});
            }
            continue;
        }
        std::string text;
        if (!one(value, text))
            return source + " must be " +
                   (o->repeatable ? "a string or an array of strings" : "a string or a number");
        out.push_back({o, text, source});
    }
    return {};
}

// CALLISTO_<OPTION> variables. Other CALLISTO_* names are left alone: test clients and
// scripts use some (CALLISTO_URL) that are not the server's.
std::string read_environment(const std::map<std::string, std::string>& env,
                             std::vector<setting>& out) {
    for (const auto& o : options()) {
        if (!o.io.show) continue;
        const std::string name = env_name(o);
        auto it = env.find(name);
        if (it == env.end()) continue;
        const std::string& value = it->second;
        if (!o.value_name) {
            if (value == "1" || value == "true" || value == "yes" || value == "on")
                out.push_back({&o, "", name});
            else if (!(value.empty() || value == "0" || value == "false" || value == "no" ||
                       value == "off"))
                return "invalid value '" + value + "' for " + name + ": expected 1 or 0";
            continue;
        }
        // An empty CALLISTO_TOKEN is how people unset it; it never meant "no token".
        if (value.empty() && secret(o)) continue;
        if (o.repeatable) {
            for (auto& item : split_list(value)) out.push_back({&o, item, name});
        } else {
            out.push_back({&o, value, name});
        }
    }
    return {};
}

}  // namespace

parse_result parse_server_config(const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env) {
    server_config cfg;
    parse_state st(cfg);
    auto fail = [](std::string why) { return parse_result{std::nullopt, std::move(why), 2}; };

    // The flags first: they may end the run (--help), name the config file, and win.
    std::vector<setting> flags;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string arg = args[i] == "-h" ? "--help" : args[i];
        if (arg.rfind("--", 0) != 0) return fail("unexpected argument '" + arg + "'");
        std::string name = arg, value;
        bool has_value = false;
        if (auto eq = arg.find('='); eq != std::string::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
            has_value = true;
        }
        const option* o = find_option(name);
        if (!o) return fail("unknown option " + name + " (see --help)");
        if (!o->value_name) {
            if (has_value) return fail(name + " takes no value");
        } else if (!has_value) {
            if (i + 1 >= args.size()) return fail(name + " needs a value");
            // "--token --port=0": the next option is not this one's value.
            if (args[i + 1].rfind("--", 0) == 0)
                return fail(name + " needs a value (" + args[i + 1] + " is an option)");
            value = args[++i];
        }
        if (o->io.show) {
            flags.push_back({o, value, name});
            continue;
        }
        // Actions act at once: --help, --version, --hash-token, --config, --print-config.
        if (auto expected = o->io.apply(value, st); !expected.empty())
            return fail(invalid({o, value, name}, expected));
        if (st.exit_now) return std::move(*st.exit_now);
    }
    if (st.config_file.empty()) {
        if (auto it = env.find("CALLISTO_CONFIG"); it != env.end()) st.config_file = it->second;
    }

    // Lowest first: the file, the environment, the flags. An option a later source sets is
    // dropped from the earlier ones, so lists are replaced rather than merged.
    std::vector<setting> file, environment;
    if (!st.config_file.empty())
        if (auto why = read_config_file(st.config_file, file); !why.empty()) return fail(why);
    if (auto why = read_environment(env, environment); !why.empty()) return fail(why);
    std::map<const option*, int> winner;
    int rank = 0;
    for (auto* source : {&file, &environment, &flags}) {
        ++rank;
        for (const auto& s : *source) winner[s.opt] = rank;
    }
    rank = 0;
    for (auto* source : {&file, &environment, &flags}) {
        ++rank;
        for (const auto& s : *source) {
            if (winner[s.opt] != rank) continue;
            if (auto expected = s.opt->io.apply(s.value, st); !expected.empty())
                return fail(invalid(s, expected));
        }
    }

    if (!st.token_given && cfg.auth_enabled) {
        cfg.token = kernelproto::random_hex(24);
        cfg.token_generated = true;
    }
    if (!cfg.auth_enabled) cfg.token.clear();
    if (cfg.certfile.empty() != cfg.keyfile.empty())
        return fail("--certfile and --keyfile go together: TLS needs the certificate and its key");
    if (!cfg.client_ca.empty() && cfg.certfile.empty())
        return fail("--client-ca needs --certfile and --keyfile: mutual TLS is TLS first");
    if (cfg.execution_timeout > cfg.max_execution_timeout)
        return fail("--execution-timeout (" + std::to_string(cfg.execution_timeout.count()) +
                    " s) must not exceed --max-execution-timeout (" +
                    std::to_string(cfg.max_execution_timeout.count()) + " s)");
    if (!cfg.state_dir_off && cfg.state_dir.empty() && cfg.sandbox)
        cfg.state_dir = cfg.workdir_root / ".callisto-state";
    if (!cfg.audit_log.empty() && cfg.audit_key.empty() && !cfg.state_dir.empty())
        cfg.audit_key = cfg.state_dir / "audit.key";
    // The runtime root's default names the serving process: none is shown.
    if (st.print_config) return {cfg, {}, 0, true};
    if (cfg.runtime_root.empty()) cfg.runtime_root = "/tmp/callisto-" + std::to_string(::getpid());
    if (cfg.keep_kernels_on_exit && cfg.state_dir.empty())
        return fail(
            "--keep-kernels-on-exit needs --state-dir: the next start adopts kernels "
            "from their records there");
    if (cfg.state_required && cfg.state_dir.empty())
        return fail("--state-required needs --state-dir: there is nowhere to write the records");
    if (!cfg.audit_log.empty() && cfg.audit_key.empty())
        return fail(
            "--audit-log needs --audit-key FILE (or a --state-dir to keep it in): the "
            "chain's key must be kept where the log's readers cannot read it");
    return {cfg, {}, 0};
}

nlohmann::json effective_config(const server_config& config) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& o : options())
        if (o.io.show && !secret(o)) out[o.name + 2] = o.io.show(config);
    return out;
}

}  // namespace callisto::gateway
