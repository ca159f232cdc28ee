#include "gateway/server_config.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "common/byte_size.hpp"
#include "gateway/egress/egress_allowlist.hpp"
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

// How one option's value is read and shown, and what its 0 means where 0 is special ("no
// limit"): what --help says after the default.
struct option_io {
    apply_fn apply;
    show_fn show;
    const char* zero_means = nullptr;
};

// One option: what --help says of it, how its value is read and shown. The usage text, the
// parsers of flags, --config files and CALLISTO_* variables, and --print-config are all made
// from this one table, and the defaults --help prints are read from a default server_config,
// so none of them can drift apart.
struct option {
    const char* name;        // "--port"
    const char* value_name;  // "N"; nullptr for a switch, which takes no value
    const char* help;        // one paragraph: --help wraps it
    option_io io;
    bool repeatable = false;  // a list: each use adds one value
    // What --help says of a default the host decides or a default server_config cannot show
    // (a generated token, a path found at start); nullptr: the shown default.
    const char* default_is = nullptr;
};

// The field an option sets, reached from the whole configuration, nested or not:
// FIELD(kernels.limits.pids). One generic lambda serves the parse (a mutable config) and the
// show (a const one).
#define FIELD(path) \
    [](auto& c) -> auto& { return c.path; }

// An option nobody set shows as null, which a --config file reads as "not set".
nlohmann::json unset_if_empty(const std::string& text) {
    return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

template <class Duration>
std::int64_t whole_seconds(Duration d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

std::string range_text(const char* what, std::uint64_t min, std::uint64_t max) {
    return std::string(what) + " " + std::to_string(min) + "-" + std::to_string(max);
}

// Whole seconds into a duration (held in seconds or milliseconds), within [min, max]; a min
// of 0 says what 0 means.
template <class Field>
option_io seconds(Field field, int min, int max, const char* zero_means = nullptr) {
    const auto expected = range_text("seconds", min, max);
    return {[=](const std::string& value, parse_state& st) -> std::string {
                int secs = 0;
                if (!parse_int(value, secs, min, max)) return expected;
                using duration = std::remove_reference_t<decltype(field(st.cfg))>;
                field(st.cfg) = std::chrono::duration_cast<duration>(std::chrono::seconds(secs));
                return {};
            },
            [=](const server_config& c) { return nlohmann::json(whole_seconds(field(c))); },
            min == 0 ? zero_means : nullptr};
}

// A duration: whole seconds, or a number with a unit (90s, 15m, 12h, 30d), up to `max`; "0" or
// "off" for `zero_means`. Shown in the largest unit that holds it whole, as it is read back.
template <class Field>
option_io duration(Field field, std::chrono::seconds max, const char* zero_means) {
    const std::string expected = "a duration like 30d, 12h, 15m or 90s (at most " +
                                 std::to_string(max.count() / 86400) + "d), or 0 or off (" +
                                 zero_means + ")";
    return {[=](const std::string& value, parse_state& st) -> std::string {
                if (value == "0" || value == "off") {
                    field(st.cfg) = std::chrono::seconds(0);
                    return {};
                }
                std::string digits = value;
                std::int64_t unit = 1;
                if (!value.empty()) {
                    switch (value.back()) {
                        case 's': unit = 1; break;
                        case 'm': unit = 60; break;
                        case 'h': unit = 3600; break;
                        case 'd': unit = 86400; break;
                        default: unit = 0;
                    }
                    if (unit)
                        digits.pop_back();
                    else
                        unit = 1;
                }
                std::int64_t n = 0;
                if (!parse_int(digits, n, std::int64_t{1}, max.count()) || n > max.count() / unit)
                    return expected;
                field(st.cfg) = std::chrono::seconds(n * unit);
                return {};
            },
            [=](const server_config& c) -> nlohmann::json {
                const auto secs = whole_seconds(field(c));
                if (secs == 0) return "off";
                for (auto [unit, name] :
                     {std::pair<std::int64_t, const char*>{86400, "d"}, {3600, "h"}, {60, "m"}})
                    if (secs % unit == 0) return std::to_string(secs / unit) + name;
                return std::to_string(secs) + "s";
            },
            zero_means};
}

// A whole number, within [min, max].
template <class Field>
option_io number(Field field, std::uint64_t min, std::uint64_t max,
                 const char* zero_means = nullptr, const char* what = "a number") {
    const auto expected = range_text(what, min, max);
    return {[=](const std::string& value, parse_state& st) -> std::string {
                auto& out = field(st.cfg);
                using integer = std::remove_reference_t<decltype(out)>;
                if (!parse_int(value, out, static_cast<integer>(min), static_cast<integer>(max)))
                    return expected;
                return {};
            },
            [=](const server_config& c) { return nlohmann::json(field(c)); },
            min == 0 ? zero_means : nullptr};
}

// A size ("32MiB", common/byte_size.hpp) of at least `min` bytes; with `zero_means`, 0 is
// taken too and means that.
template <class Field>
option_io bytes(Field field, std::uint64_t min, const char* zero_means = nullptr) {
    const server_config defaults;
    const std::uint64_t sample = field(defaults) ? field(defaults) : std::uint64_t{100} << 20;
    const std::string like = "a size like " + format_size(sample);
    const std::string expected = like + (min > 1 ? ", at least " + format_size(min) : "") +
                                 (zero_means ? ", or 0 for " + std::string(zero_means) : "");
    return {[=](const std::string& value, parse_state& st) -> std::string {
                using integer = std::remove_reference_t<decltype(field(st.cfg))>;
                // 0 is written "0"; "0KiB" or "00" is more likely a slip than "no limit".
                if (zero_means && value == "0") {
                    field(st.cfg) = 0;
                    return {};
                }
                const auto size = parse_size(value);
                if (!size || *size < std::max<std::uint64_t>(min, 1)) return expected;
                field(st.cfg) = static_cast<integer>(*size);
                return {};
            },
            [=](const server_config& c) { return nlohmann::json(format_size(field(c))); },
            zero_means};
}

// A path; unset (shown as null) when not given. `absolute`: relative paths are refused.
template <class Field>
option_io path(Field field, bool absolute = false) {
    return {[=](const std::string& value, parse_state& st) -> std::string {
                if (value.empty() || (absolute && value.front() != '/'))
                    return absolute ? "an absolute path" : "a path";
                field(st.cfg) = value;
                return {};
            },
            [=](const server_config& c) { return unset_if_empty(field(c).string()); }};
}

// One of a few words, each standing for a value of the field: {"ipc", true}, {"tcp", false}.
template <class Field, class Value>
option_io one_of(Field field, std::vector<std::pair<std::string, Value>> words) {
    std::string expected;
    for (std::size_t i = 0; i < words.size(); ++i)
        expected += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i].first;
    return {[=](const std::string& value, parse_state& st) -> std::string {
                for (const auto& [word, meaning] : words)
                    if (value == word) {
                        field(st.cfg) = meaning;
                        return {};
                    }
                return expected;
            },
            [=](const server_config& c) -> nlohmann::json {
                for (const auto& [word, meaning] : words)
                    if (field(c) == meaning) return word;
                return nullptr;
            }};
}

template <class Field>
option_io on_off(Field field) {
    return one_of(field, std::vector<std::pair<std::string, bool>>{{"on", true}, {"off", false}});
}

// A switch that takes no value: given, the field is `when_given`. Shown (and read from a file)
// as whether it was given.
template <class Field>
option_io given(Field field, bool when_given = true) {
    return {[=](const std::string&, parse_state& st) -> std::string {
                field(st.cfg) = when_given;
                return {};
            },
            [=](const server_config& c) { return nlohmann::json(field(c) == when_given); }};
}

// A DNS name in lower case (a trailing dot dropped): labels of 1-63 letters, digits and inner
// hyphens, 253 characters at most. nullopt for anything else (an address, a wildcard, a URL).
std::optional<std::string> dns_name(std::string value) {
    if (!value.empty() && value.back() == '.') value.pop_back();
    if (value.empty() || value.size() > 253) return std::nullopt;
    std::transform(value.begin(), value.end(), value.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (std::size_t start = 0; start <= value.size();) {
        const auto end = std::min(value.find('.', start), value.size());
        const std::string_view label(value.data() + start, end - start);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
            return std::nullopt;
        for (char c : label)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return std::nullopt;
        start = end + 1;
    }
    // All digits and dots is an IPv4 address, not a name.
    if (value.find_first_not_of("0123456789.") == std::string::npos) return std::nullopt;
    return value;
}

// An action: acts when given (--help, --config) and is neither shown nor read from a file.
std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

option_io action(apply_fn apply) { return {std::move(apply), nullptr}; }

const std::vector<option>& options() {
    using kernels::culling_policy;
    static const std::vector<option> table = {
        {"--ip",
         "ADDR",
         "address to listen on",
         {[](const std::string& value, parse_state& st) -> std::string {
              // "localhost" is what people type; the listener wants an address.
              const std::string ip = value == "localhost" ? "127.0.0.1" : value;
              unsigned char scratch[sizeof(in6_addr)];
              if (::inet_pton(AF_INET, ip.c_str(), scratch) != 1 &&
                  ::inet_pton(AF_INET6, ip.c_str(), scratch) != 1)
                  return "an IP address such as 127.0.0.1, 0.0.0.0 or ::1 (or localhost)";
              st.cfg.ip = ip;
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.ip); }}},
        {"--port", "N", "port to listen on (0 picks a free port)",
         number(FIELD(port), 0, 65535, nullptr, "a port number")},
        {"--token",
         "T",
         "API token",
         {[](const std::string& value, parse_state& st) -> std::string {
              if (!valid_token(value)) return "8-512 printable characters without spaces";
              st.cfg.token = value;
              st.token_given = true;
              return {};
          },
          // Never shown (effective_config leaves secrets out); a shower, so that a --config
          // file and CALLISTO_TOKEN may set it.
          [](const server_config&) { return nlohmann::json(nullptr); }},
         false,
         "$CALLISTO_TOKEN, else a random one, printed"},
        {"--no-auth", nullptr, "serve without a token (development only)",
         given(FIELD(auth_enabled), false)},
        {"--threads", "N", "I/O threads", number(FIELD(threads), 1, 64)},
        {"--kernel-dir",
         "DIR",
         "a directory of kernelspecs, searched before the standard Jupyter paths (repeatable)",
         {[](const std::string& value, parse_state& st) -> std::string {
              if (value.empty()) return "a directory";
              st.cfg.kernel_dirs.emplace_back(value);
              return {};
          },
          [](const server_config& c) {
              auto dirs = nlohmann::json::array();
              for (const auto& d : c.kernel_dirs) dirs.push_back(d.string());
              return dirs;
          }},
         true,
         "none"},
        {"--default-kernel",
         "NAME",
         "kernelspec used when a request names none",
         {[](const std::string& value, parse_state& st) -> std::string {
              if (value.empty()) return "a kernelspec name";
              st.cfg.kernels.default_kernel = value;
              return {};
          },
          [](const server_config& c) { return unset_if_empty(c.kernels.default_kernel); }},
         false,
         "python3 when installed, else the first one found"},
        {"--runtime-dir",
         "DIR",
         "connection files and ipc sockets",
         {[](const std::string& value, parse_state& st) -> std::string {
              if (value.empty() || value.size() > 60) return "a directory path of 1-60 characters";
              st.cfg.kernels.runtime_root = value;
              return {};
          },
          [](const server_config& c) { return unset_if_empty(c.kernels.runtime_root.string()); }},
         false,
         "/tmp/callisto-<pid>"},
        {"--transport", "ipc|tcp", "how the gateway talks to kernels",
         one_of(FIELD(kernels.ipc_transport),
                std::vector<std::pair<std::string, bool>>{{"ipc", true}, {"tcp", false}})},
        {"--web-root",
         "DIR|off",
         "serve a static web UI from DIR at /; off: none",
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
          }},
         false,
         "the first of <binary dir>/../share/callisto/web, <binary dir>/web, the source tree's "
         "web/ for a binary of its build tree, and the install prefix's share/callisto/web that "
         "has an index.html"},
        {"--max-message-size", "SIZE", "largest WebSocket message from a client",
         bytes(FIELD(max_message_bytes), 1)},
        {"--client-queue", "SIZE", "per-WebSocket send queue before the client is dropped",
         bytes(FIELD(client_send_queue_bytes), 1)},
        {"--replay-buffer", "SIZE",
         "per-kernel iopub output kept for clients reconnecting with ?since=SEQ",
         bytes(FIELD(kernels.replay_buffer_bytes), 1)},
        {"--client-input-queue", "SIZE",
         "per WebSocket, the bytes of its messages waiting for a kernel that is not reading; "
         "past it messages are refused with an error",
         bytes(FIELD(client_input_queue_bytes), 1024, "no limit")},
        {"--kernel-buffer", "SIZE",
         "per kernel, the bytes of its messages the gateway holds (queued, being relayed, kept "
         "for replay); past it the kernel's large messages are dropped and its clients told",
         bytes(FIELD(kernels.kernel_buffer_bytes), 1024, "no limit")},
        {"--kernel-message-limit", "SIZE",
         "largest message part a kernel may send (16MiB at most for replies); a larger one is "
         "dropped, the connection made again, and a request whose reply it was answered with an "
         "error",
         bytes(FIELD(kernels.kernel_message_limit_bytes), 64u << 10)},
        {"--ws-output-limit", "SIZE",
         "per execution, the stdout/stderr bytes sent to Jupyter WebSocket clients; the rest is "
         "dropped with a notice; half of it for an error's value and for its traceback",
         bytes(FIELD(kernels.ws_output_limit_bytes), 1024, "no limit")},
        {"--ws-rich-output-limit", "SIZE", "the same for display data and results",
         bytes(FIELD(kernels.ws_rich_output_limit_bytes), 1024, "no limit")},
        {"--ws-ping-interval", "SECS", "a WebSocket client silent this long is sent a ping",
         seconds(FIELD(ws_ping_interval), 1, 3600)},
        {"--ws-ping-timeout", "SECS",
         "a WebSocket client silent this long, pings unanswered, is closed and the reason "
         "logged; while the host is past its capacity up to ten times this",
         seconds(FIELD(ws_ping_timeout), 1, 36000)},
        {"--max-connections", "N", "open client connections in all",
         number(FIELD(max_connections), 0, 1000000, "no limit")},
        {"--max-connections-per-address", "N",
         "open connections from one client address (behind a proxy every client has the "
         "proxy's address)",
         number(FIELD(max_connections_per_address), 0, 1000000, "no limit")},
        {"--header-timeout", "SECS",
         "a new connection must send its first request header within this",
         seconds(FIELD(header_timeout), 1, 3600)},
        {"--max-body-in-flight", "SIZE",
         "bodies held for connections, all together and both ways: request bodies being "
         "received or handled, answers over 64KiB being sent, 64KiB per file download; past it "
         "a request, an answer or a download is refused 503 with Retry-After",
         bytes(FIELD(max_body_bytes_in_flight), 1024, "no limit")},
        {"--kernel-ready-timeout", "SECS", "kernel start to first reply",
         seconds(FIELD(kernels.kernel_ready_timeout), 1, 3600)},
        {"--drain-seconds", "SECS",
         "at SIGTERM, answer /readyz 503 this long first (a load balancer then sends new users "
         "elsewhere), then stop; a second SIGTERM stops at once",
         seconds(FIELD(drain_seconds), 0, 3600, "stop at once")},
        {"--shed-load", "on|off",
         "when the host is past its capacity (the CPU contended, and a long run queue, the "
         "gateway's event loop late or kernels' heartbeats missing), refuse new kernels, "
         "contexts and one-shot executions 503 with Retry-After so the work already running "
         "keeps its pace",
         on_off(FIELD(shed_load))},
        {"--shed-cpu-pressure", "PCT",
         "CPU pressure (Linux PSI, /proc/pressure/cpu \"some avg10\") at which the CPU counts "
         "as contended",
         number(FIELD(shed_cpu_pressure), 1, 100, nullptr, "a percentage")},
        {"--shed-run-queue", "N",
         "tasks ready to run per CPU (/proc/loadavg) at which new work would wait too long, "
         "with the CPU contended",
         number(FIELD(shed_run_queue), 1, 1000)},
        {"--shed-lag", "MS",
         "how late the gateway's event loop may run before its work counts as suffering",
         number(FIELD(shed_lag_ms), 10, 60000, nullptr, "milliseconds")},
        {"--shutdown-wait", "SECS", "shutdown_request to SIGTERM",
         seconds(FIELD(kernels.shutdown_wait), 0, 600, "SIGTERM at once")},
        {"--certfile", "FILE",
         "serve HTTPS and WSS with this PEM certificate chain (with --keyfile; TLS 1.2 at "
         "least; SIGHUP reloads both)",
         path(FIELD(certfile)), false, "none"},
        {"--keyfile", "FILE", "the PEM private key of --certfile", path(FIELD(keyfile)), false,
         "none"},
        {"--client-ca", "FILE",
         "mutual TLS: accept only clients with a certificate from this PEM CA (with --certfile)",
         path(FIELD(client_ca)), false, "none"},
        {"--users", "FILE",
         "users, roles and kernel quotas (JSON; replaces --token): [{\"name\": \"ana\", "
         "\"token_sha256\": \"…\", \"role\": \"user\", \"max_kernels\": 4}, …]",
         path(FIELD(users_file)), false, "none"},
        {"--hash-token", "T",
         "print the token_sha256 of T for a users file, and exit; T '-' reads it from the first "
         "line of standard input (not shown by ps)",
         action([](const std::string& value, parse_state& st) -> std::string {
             std::string token = value;
             if (value == "-") {
                 std::getline(std::cin, token);
                 if (!token.empty() && token.back() == '\r') token.pop_back();
             }
             if (!valid_token(token)) return "8-512 printable characters without spaces";
             st.exit_now = parse_result{std::nullopt, token_auth::token_sha256(token), 0};
             return {};
         })},
        {"--max-kernels", "N", "kernels of all users together",
         number(FIELD(max_kernels), 0, 100000, "no limit")},
        {"--pool-size", "N", "pre-started kernels of the default kernelspec",
         number(FIELD(default_pool_size), 0, 64, "none")},
        {"--pool",
         "NAME:N",
         "pre-started kernels of kernelspec NAME (repeatable)",
         {[](const std::string& value, parse_state& st) -> std::string {
              const auto colon = value.rfind(':');
              std::size_t size = 0;
              if (colon == std::string::npos || colon == 0 ||
                  !parse_int(value.substr(colon + 1), size, std::size_t{0}, std::size_t{64}))
                  return "NAME:N with N 0-64";
              st.cfg.pool_sizes[value.substr(0, colon)] = size;
              return {};
          },
          [](const server_config& c) {
              auto pools = nlohmann::json::array();
              for (const auto& [name, n] : c.pool_sizes)
                  pools.push_back(name + ":" + std::to_string(n));
              return pools;
          }},
         true,
         "none"},
        {"--kernel-policy", "reuse|fresh",
         "what a context or one-shot execution that names no policy gets: reuse keeps a "
         "finished context's kernel, reset, for its owner's next one; fresh always starts from "
         "a kernel no one used and destroys it afterwards",
         one_of(FIELD(interpreter.default_policy),
                std::vector<std::pair<std::string, kernels::kernel_policy>>{
                    {"reuse", kernels::kernel_policy::reuse},
                    {"fresh", kernels::kernel_policy::fresh}})},
        {"--recycle-max-uses", "N", "contexts or one-shot runs one kernel serves under reuse",
         number(FIELD(reuse.limits.max_uses), 0, 1000000, "no limit")},
        {"--recycle-max-lifetime", "SECS", "a kernel older than this is not reused",
         seconds(FIELD(reuse.limits.max_lifetime), 0, 366 * 24 * 3600, "any age")},
        {"--kept-kernels", "N", "reset kernels kept per user for reuse",
         number(FIELD(reuse.kept_per_user), 0, 64, "none")},
        {"--autorestart-limit", "N", "automatic restarts after a kernel dies, per window",
         number(FIELD(kernels.autorestart_limit), 0, 1000, "a dead kernel stays dead")},
        {"--autorestart-window", "SECS", "the window for --autorestart-limit",
         seconds(FIELD(kernels.autorestart_window), 1, 24 * 3600)},
        {"--heartbeat-timeout", "SECS",
         "a kernel that answers no heartbeat this long is frozen (stopped, deadlocked): it is "
         "killed and restarted per --autorestart-limit",
         seconds(FIELD(kernels.heartbeat_timeout), 0, 24 * 3600, "never")},
        {"--cull-idle-timeout", "SECS", "shut down kernels idle this long",
         seconds(FIELD(culling.idle_timeout), 0, 366 * 24 * 3600, "never")},
        {"--cull-busy-timeout", "SECS", "shut down kernels busy this long",
         seconds(FIELD(culling.busy_timeout), 0, 366 * 24 * 3600, "never")},
        {"--kernel-max-lifetime", "SECS", "shut down kernels this old, whatever they do",
         seconds(FIELD(culling.max_lifetime), 0, 366 * 24 * 3600, "never")},
        {"--cull-connected", nullptr, "cull kernels even while clients are connected",
         given(FIELD(culling.cull_connected))},
        {"--cull-interval", "SECS", "how often the culling rules are checked",
         seconds(FIELD(culling.interval), 1, 366 * 24 * 3600)},
        {"--culled-retention", "SECS", "how long a culled kernel's id answers 410 Gone",
         seconds(FIELD(culling.retention), 0, 366 * 24 * 3600, "not at all")},
        {"--sandbox", "on|off",
         "run kernels in the sandbox (off is for development only: kernel code then runs as the "
         "gateway's user)",
         on_off(FIELD(sandbox))},
        {"--zygote", "on|off",
         "fork Python kernels from a zygote per kernelspec that has imported ipykernel and the "
         "data stack; off: every kernel starts its own interpreter",
         on_off(FIELD(zygote))},
        {"--state-dir",
         "DIR|off",
         "where kernel records are kept so that kernels outlive a gateway crash or upgrade and "
         "the next start adopts them; off: kernels die with the gateway",
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
          }},
         false,
         "<workdir-root>/.callisto-state; off with --sandbox=off"},
        {"--keep-kernels-on-exit", "on|off",
         "SIGTERM leaves the kernels running for the next start to adopt (needs --state-dir), "
         "as SIGUSR2 does; off: SIGTERM stops them",
         on_off(FIELD(keep_kernels_on_exit))},
        {"--state-required", "on|off",
         "refuse to start a kernel whose record cannot be written to --state-dir (a full disk): "
         "it would not survive a restart; off: it runs without, and the error is logged and "
         "counted",
         on_off(FIELD(kernels.state_required))},
        {"--workdir-root", "DIR",
         "per-kernel working directories; one instance per root: it is locked, and what a "
         "crashed instance left there is reaped at start",
         path(FIELD(kernels.workdir_root), true)},
        {"--sandbox-uids",
         "FIRST-LAST",
         "uids (and gids) given to sessions; give each instance on a host its own range",
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
        {"--memory-limit", "SIZE", "per kernel", bytes(FIELD(kernels.limits.memory_bytes), 1)},
        {"--pids-limit", "N", "processes and threads per kernel",
         number(FIELD(kernels.limits.pids), 8, 1u << 22)},
        {"--cpu-limit",
         "CORES",
         "CPU share per kernel, e.g. 0.5",
         {[](const std::string& value, parse_state& st) -> std::string {
              char* end = nullptr;
              const double cores = std::strtod(value.c_str(), &end);
              if (value.empty() || end != value.c_str() + value.size() || !(cores >= 0.01) ||
                  cores > 1024)
                  return "cores 0.01-1024";
              st.cfg.kernels.limits.cpu_cores = cores;
              return {};
          },
          [](const server_config& c) { return nlohmann::json(c.kernels.limits.cpu_cores); }}},
        {"--cpu-time-limit", "SECS", "CPU seconds per kernel process",
         number(FIELD(kernels.limits.cpu_time_seconds), 1, 1u << 30, nullptr, "seconds")},
        {"--file-size-limit", "SIZE", "largest file a kernel may write",
         bytes(FIELD(kernels.limits.file_size_bytes), 1)},
        {"--open-files-limit", "N", "open files per kernel process",
         number(FIELD(kernels.limits.open_files), 64, 1u << 20)},
        {"--disk-quota", "SIZE", "total size of a kernel's working directory",
         bytes(FIELD(kernels.limits.disk_bytes), 1)},
        {"--tmp-size", "SIZE", "size of the kernel's /tmp and /dev/shm",
         bytes(FIELD(kernels.limits.tmp_bytes), 1)},
        {"--egress-allow",
         "HOST[:PORT],...",
         "the destinations a kernel may ever reach through the gateway's egress proxy: a name "
         "(pypi.org), the names below a domain (*.example.org) or an exact address "
         "(127.0.0.1:8080, [::1]:8080, the only way to open loopback or a private range); "
         "without a port a rule allows 80 and 443. A ceiling: a user's egress_allow and a "
         "context's network.allow stay within it, and a context that asks for nothing has no "
         "network (repeatable)",
         {[](const std::string& value, parse_state& st) -> std::string {
              const auto items = split_list(value);
              if (items.empty()) return "HOST[:PORT] rules";
              for (const auto& item : items) {
                  auto rule = egress::parse_rule(item);
                  if (auto* error = std::get_if<std::string>(&rule))
                      return "HOST[:PORT] rules (`" + item + "`: " + *error + ")";
                  st.cfg.egress_allow.push_back(std::get<egress::allow_rule>(rule).text);
              }
              return {};
          },
          [](const server_config& c) {
              auto rules = nlohmann::json::array();
              for (const auto& r : c.egress_allow) rules.push_back(r);
              return rules;
          }},
         true,
         "none: no network"},
        {"--egress-connections", "N",
         "per networked kernel, connections open at once through its egress proxy; past it "
         "the proxy answers 429",
         number(FIELD(egress_connections), 1, 4096)},
        {"--egress-rate", "SIZE",
         "per networked kernel, bytes per second through its egress proxy, both ways and all "
         "its connections together",
         bytes(FIELD(egress_bytes_per_second), 1, "no cap")},
        {"--output-budget", "SIZE",
         "per execution and stream, the text kept (head and tail, with a marker for the cut); "
         "so much too of an error's value and of its traceback",
         bytes(FIELD(interpreter.text_budget_bytes), 1024)},
        {"--result-cap", "SIZE",
         "largest rich result (one MIME value) returned inline; larger ones go to a file in the "
         "context's workdir",
         bytes(FIELD(interpreter.result_cap_bytes), 1024)},
        {"--execution-queue", "N", "executions waiting per context before 429",
         number(FIELD(interpreter.queue_limit), 1, 1024)},
        {"--interrupt-grace", "SECS",
         "after a deadline's interrupt, wait this long before restarting the kernel",
         seconds(FIELD(interpreter.interrupt_grace), 0, 600, "restart at once")},
        {"--execution-timeout", "SECS",
         "the deadline of a /v1 execution that names no timeout (at it: the interrupt, then "
         "after --interrupt-grace a restart)",
         seconds(FIELD(interpreter.request_limits.default_timeout), 0, 7 * 24 * 3600, "none")},
        {"--max-execution-timeout", "SECS",
         "the longest timeout a /v1 execution may ask for; MCP's run_code keeps its own 120 s "
         "default and 3600 s maximum within it",
         seconds(FIELD(interpreter.request_limits.max_timeout), 1, 7 * 24 * 3600)},
        {"--upload-limit", "SIZE", "largest file upload to a context",
         bytes(FIELD(interpreter.max_upload_bytes), 1)},
        {"--snapshot-dir", "DIR",
         "where snapshots of /v1 contexts (POST /v1/contexts/{id}/snapshots) are kept, each "
         "with its owner and SHA-256 checksums; shared between replicas, a snapshot taken on "
         "one is restored on another",
         path(FIELD(interpreter.snapshot_dir), true), false, "<state-dir>/snapshots"},
        {"--snapshot-quota", "N", "snapshots kept per user; past it a new one answers 507",
         number(FIELD(interpreter.snapshot_limits.max_count), 1, 100000)},
        {"--snapshot-quota-bytes", "SIZE",
         "the bytes of a user's snapshots together; past it a new one answers 507",
         bytes(FIELD(interpreter.snapshot_limits.max_bytes), 1)},
        {"--pause-idle", "SECS",
         "pause a /v1 Python context idle this long instead of letting it be culled: its "
         "state saved, its kernel shut down, resumed by its next execution (keep it below "
         "--cull-idle-timeout, which would cull the kernel first)",
         seconds(FIELD(interpreter.pause_idle), 0, 366 * 24 * 3600, "never")},
        {"--paused-ttl", "DURATION",
         "delete a paused context, with its snapshot, once it has been paused this long "
         "(counted from the pause time its record keeps, across restarts); audited and "
         "counted; GET /v1/contexts shows its expires_at",
         duration(FIELD(interpreter.paused_ttl), std::chrono::seconds(3660LL * 86400),
                  "kept for ever")},
        {"--mcp-session-timeout", "SECS",
         "an MCP session idle this long ends and its context is deleted",
         seconds(FIELD(mcp.idle_timeout), 0, 7 * 24 * 3600, "never")},
        {"--mcp-max-sessions", "N", "MCP sessions per user; initialize beyond it answers 429",
         number(FIELD(mcp.max_per_user), 1, 10000)},
        {"--e2b-domain",
         "DOMAIN|off",
         "E2B's SDKs without E2B_SANDBOX_URL reach a sandbox at https://<port>-<id>.DOMAIN: "
         "only such hosts name a sandbox (a wildcard DNS name and certificate for *.DOMAIN in "
         "front); off: any host of that shape does, or the E2b-Sandbox-Id header",
         {[](const std::string& value, parse_state& st) -> std::string {
              if (value == "off") {
                  st.cfg.e2b_domain.clear();
                  return {};
              }
              const auto domain = dns_name(value);
              if (!domain) return "a DNS name such as sandbox.example.org, or off";
              st.cfg.e2b_domain = *domain;
              return {};
          },
          [](const server_config& c) {
              return nlohmann::json(c.e2b_domain.empty() ? "off" : c.e2b_domain);
          }}},
        {"--e2b-template",
         "NAME:KERNELSPEC[:pool=N][:timeout=SECS]",
         "an E2B template: a templateID NAME whose sandboxes run KERNELSPEC, with N ready "
         "kernels of it added to the warm pool (0-64) and, for a create that sends no timeout, "
         "a lifetime of SECS (1-86400); it wins over a kernelspec of that name and the SDKs' "
         "defaults, code-interpreter-v1 and base (repeatable)",
         {[](const std::string& value, parse_state& st) -> std::string {
              std::string error;
              auto t = e2b::parse_sandbox_template(value, error);
              if (!t) return error;
              for (const auto& other : st.cfg.e2b_templates)
                  if (other.name == t->name)
                      return "one declaration per template name (" + t->name +
                             " is declared twice)";
              st.cfg.e2b_templates.push_back(std::move(*t));
              return {};
          },
          [](const server_config& c) {
              auto templates = nlohmann::json::array();
              for (const auto& t : c.e2b_templates)
                  templates.push_back(e2b::format_sandbox_template(t));
              return templates;
          }},
         true,
         "none"},
        {"--audit-log", "FILE",
         "record every execution (Jupyter WebSocket, /v1 and MCP) in FILE before it runs, and "
         "how it ended: user, kernel, code, status, duration, output; lines chained under a key "
         "(--audit-key); `callisto audit-verify --key KEY FILE...` checks them",
         path(FIELD(audit.file)), false, "none"},
        {"--audit-key", "FILE",
         "the audit chain's secret key, created (0600) when missing; its anchor (the last line "
         "written) is kept beside it as NAME.anchor. Keep it where the log's readers cannot "
         "read it",
         path(FIELD(audit.key_file)), false, "<state-dir>/audit.key"},
        {"--audit-code", "full|hash", "record the code itself, or only its sha256 and size",
         one_of(FIELD(audit.record_code),
                std::vector<std::pair<std::string, bool>>{{"full", true}, {"hash", false}})},
        {"--audit-code-limit", "SIZE",
         "code (or user expressions) longer than this is recorded by its sha256 and size only, "
         "even with --audit-code=full",
         bytes(FIELD(audit.code_limit), 1)},
        {"--audit-rotate", "SIZE",
         "start a new audit file past this size (FILE.1 is the newest old one; the chain "
         "continues)",
         bytes(FIELD(audit.rotate_bytes), 1024, "never")},
        {"--audit-keep", "N", "rotated audit files kept",
         number(FIELD(audit.keep), 0, 100000, "all")},
        {"--audit-required", "on|off",
         "refuse executions that cannot be recorded (unwritable file, full disk) rather than run "
         "them unrecorded",
         on_off(FIELD(audit.required))},
        {"--metrics-public", nullptr,
         "serve GET /metrics without a token (for a scraper on a private network; by default it "
         "needs an admin's token)",
         given(FIELD(metrics_public))},
        {"--log-level", "LEVEL", "the least important lines logged",
         one_of(FIELD(log),
                std::vector<std::pair<std::string, log_level>>{{"debug", log_level::debug},
                                                               {"info", log_level::info},
                                                               {"warn", log_level::warn},
                                                               {"error", log_level::error}})},
        {"--log-format", "text|json",
         "log lines as text, or as one JSON object per line with time, level, component, "
         "kernel_id, context_id, user where they apply",
         one_of(FIELD(log_format),
                std::vector<std::pair<std::string, callisto::log_format>>{
                    {"text", log_format::text}, {"json", log_format::json}})},
        {"--version", nullptr, "print the version and exit",
         action([](const std::string&, parse_state& st) -> std::string {
             st.exit_now =
                 parse_result{std::nullopt, std::string("callisto ") + CALLISTO_VERSION, 0};
             return {};
         })},
        {"--config", "FILE",
         "read options from a JSON file: {\"port\": 8888, \"pool\": [\"python3:2\"], "
         "\"no-auth\": false, ...}, keys being the option names; then CALLISTO_<OPTION> "
         "variables (CALLISTO_MAX_KERNELS=10; lists comma-separated), then flags; the last "
         "source wins",
         action([](const std::string& value, parse_state& st) -> std::string {
             if (value.empty()) return "a JSON file";
             st.config_file = value;
             return {};
         })},
        {"--print-config", nullptr,
         "print the effective configuration as JSON, a valid --config file, and exit; the token "
         "is left out (set it apart: $CALLISTO_TOKEN)",
         action([](const std::string&, parse_state& st) -> std::string {
             st.print_config = true;
             return {};
         })},
        {"--help", nullptr, "this text",
         action([](const std::string&, parse_state& st) -> std::string {
             st.exit_now = parse_result{std::nullopt, usage_text(), 0};
             return {};
         })},
    };
    return table;
}

#undef FIELD

const option* find_option(std::string_view name) {
    for (const auto& o : options())
        if (name == o.name) return &o;
    return nullptr;
}

// What --help and the README say an option's default is: declared, or the value a default
// configuration shows, with what 0 means when it means something. Empty for actions.
std::string default_text(const option& o) {
    if (o.default_is) return o.default_is;
    if (!o.io.show) return {};
    const auto shown = o.io.show(server_config{});
    std::string text = shown.is_string()    ? shown.get<std::string>()
                       : shown.is_boolean() ? (shown.get<bool>() ? "on" : "off")
                                            : shown.dump();
    if (o.io.zero_means && text == "0")
        text += ": " + std::string(o.io.zero_means);
    else if (o.io.zero_means)
        text += "; 0: " + std::string(o.io.zero_means);
    return text;
}

// `text` as lines of at most `width` characters, broken between words.
std::vector<std::string> wrap(std::string_view text, std::size_t width) {
    std::vector<std::string> lines(1);
    std::size_t at = 0;
    while (at < text.size()) {
        const auto end = std::min(text.find(' ', at), text.size());
        const auto word = text.substr(at, end - at);
        if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width)
            lines.emplace_back();
        if (!lines.back().empty()) lines.back() += ' ';
        lines.back() += word;
        at = end + 1;
    }
    return lines;
}

}  // namespace

std::string usage_text() {
    // 80 columns: the help in a column of its own, under a flag too long to stand beside it.
    constexpr std::size_t help_column = 28;
    constexpr std::size_t help_width = 80 - help_column;
    std::string out =
        "Usage: callisto [options]\n\nServes the Jupyter Kernel Gateway REST and WebSocket API "
        "over real ipykernels.\n\n";
    for (const auto& o : options()) {
        std::string flag = std::string("  ") + o.name;
        if (o.value_name) flag += std::string("=") + o.value_name;
        if (flag.size() + 2 > help_column) out += flag + "\n", flag.clear();
        flag.resize(help_column, ' ');
        std::string help = o.help;
        if (const auto d = default_text(o); !d.empty() && o.value_name)
            help += " (default " + d + ")";
        bool first = true;
        for (const auto& line : wrap(help, help_width)) {
            out += (first ? flag : std::string(help_column, ' ')) + line + "\n";
            first = false;
        }
    }
    return out + R"(
Sizes take B, KiB, MiB, GiB or TiB. A kernelspec may override the limits in kernel.json:
"metadata": {"callisto": {"limits": {"memory": "4GiB", "pids": 512, "cpu": 2, "cpu_time": 60,
"file_size": "1GiB", "open_files": 1024, "disk": "2GiB", "tmp": "256MiB"}}}
)";
}

std::vector<option_summary> option_summaries() {
    std::vector<option_summary> out;
    for (const auto& o : options())
        out.push_back({o.name, o.io.show != nullptr, default_text(o), o.default_is != nullptr});
    return out;
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

// "--max-kernels" <-> "CALLISTO_MAX_KERNELS", "--e2b-domain" <-> "CALLISTO_E2B_DOMAIN".
std::string env_name(const option& o) {
    std::string out = "CALLISTO_";
    for (const char* p = o.name + 2; *p; ++p)
        out += *p == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
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
    const auto& timeouts = cfg.interpreter.request_limits;
    if (timeouts.default_timeout > timeouts.max_timeout)
        return fail("--execution-timeout (" + std::to_string(timeouts.default_timeout.count()) +
                    " s) must not exceed --max-execution-timeout (" +
                    std::to_string(timeouts.max_timeout.count()) + " s)");
    // A template's default lifetime is one a create could ask for (e2b_settings' bound).
    for (const auto& t : cfg.e2b_templates)
        if (t.timeout && *t.timeout > timeouts.max_timeout)
            return fail("--e2b-template=" + e2b::format_sandbox_template(t) + ": its timeout (" +
                        std::to_string(t.timeout->count()) +
                        " s) must not exceed --max-execution-timeout (" +
                        std::to_string(timeouts.max_timeout.count()) +
                        " s), the longest a sandbox may ask for");
    if (!cfg.state_dir_off && cfg.state_dir.empty() && cfg.sandbox)
        cfg.state_dir = cfg.kernels.workdir_root / ".callisto-state";
    if (!cfg.audit.file.empty() && cfg.audit.key_file.empty() && !cfg.state_dir.empty())
        cfg.audit.key_file = cfg.state_dir / "audit.key";
    // The runtime root's default names the serving process: none is shown.
    if (st.print_config) return {cfg, {}, 0, true};
    if (cfg.kernels.runtime_root.empty())
        cfg.kernels.runtime_root = "/tmp/callisto-" + std::to_string(::getpid());
    if (cfg.keep_kernels_on_exit && cfg.state_dir.empty())
        return fail(
            "--keep-kernels-on-exit needs --state-dir: the next start adopts kernels "
            "from their records there");
    if (!cfg.egress_allow.empty() && !cfg.sandbox)
        return fail(
            "--egress-allow needs the sandbox: with --sandbox=off a kernel has the host's "
            "network, and no allowlist applies to it");
    if (cfg.kernels.state_required && cfg.state_dir.empty())
        return fail("--state-required needs --state-dir: there is nowhere to write the records");
    if (!cfg.audit.file.empty() && cfg.audit.key_file.empty())
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
