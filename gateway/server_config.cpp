#include "gateway/server_config.hpp"

#include <charconv>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <unistd.h>

#include "gateway/auth.hpp"
#include "kernelproto/ids.hpp"

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
    if (digits == 0 || !parse_int(text.substr(0, digits), value, std::uint64_t{1},
                                  std::uint64_t{1} << 40))
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
    if (text == "debug") out = log_level::debug;
    else if (text == "info") out = log_level::info;
    else if (text == "warn") out = log_level::warn;
    else if (text == "error") out = log_level::error;
    else return false;
    return true;
}

bool valid_token(const std::string& token) {
    if (token.size() < 8 || token.size() > 512) return false;
    for (char c : token)
        if (c <= ' ' || c > '~') return false;
    return true;
}

}  // namespace

std::string usage_text() {
    return R"(Usage: callisto [options]

Serves the Jupyter Kernel Gateway REST and WebSocket API over real ipykernels.

  --ip=ADDR                 address to listen on (default 127.0.0.1)
  --port=N                  port to listen on (default 8888; 0 picks a free port)
  --token=T                 API token (default: $CALLISTO_TOKEN, else a random one, printed)
  --no-auth                 serve without a token (development only)
  --threads=N               I/O threads (default 2)
  --kernel-dir=DIR          a directory of kernelspecs, searched before the standard
                            Jupyter paths (repeatable)
  --default-kernel=NAME     kernelspec used when a request names none
  --runtime-dir=DIR         connection files and ipc sockets (default /tmp/callisto-<pid>)
  --transport=ipc|tcp       how the gateway talks to kernels (default ipc)
  --web-root=DIR            serve a static web UI from DIR at /
  --max-message-size=SIZE   largest WebSocket message from a client (default 32MiB)
  --client-queue=SIZE       per-WebSocket send queue before the client is dropped (default 256MiB)
  --replay-buffer=SIZE      per-kernel iopub output kept for clients reconnecting with
                            ?since=SEQ (default 8MiB)
  --client-input-queue=SIZE per WebSocket, the bytes of its messages waiting for a kernel
                            that is not reading; past it messages are refused with an error
                            (default 64MiB; 0: no limit)
  --kernel-buffer=SIZE      per kernel, the bytes of its messages the gateway holds (queued,
                            being relayed, kept for replay); past it the kernel's large
                            messages are dropped and its clients told (default 128MiB; 0: none)
  --kernel-message-limit=SIZE  largest message part a kernel may send; a larger one drops the
                            kernel's connection, which reconnects (default 64MiB)
  --ws-output-limit=SIZE    per execution, the stdout/stderr bytes sent to Jupyter WebSocket
                            clients; the rest is dropped with a notice (default 8MiB; 0: none)
  --ws-rich-output-limit=SIZE  the same for display data and results (default 64MiB; 0: none)
  --ws-ping-interval=SECS   WebSocket keepalive ping interval (default 30)
  --max-connections=N       open client connections in all (default 10000; 0: no limit)
  --max-connections-per-address=N  open connections from one client address (default 1000;
                            0: no limit; behind a proxy every client has the proxy's address)
  --header-timeout=SECS     a new connection must send its first request header within this
                            (default 10)
  --max-body-in-flight=SIZE request bodies being received or held, all connections together;
                            past it a request is refused 503 with Retry-After (default 256MiB;
                            0: no limit)
  --kernel-ready-timeout=SECS  kernel start to first reply (default 60)
  --shutdown-wait=SECS      shutdown_request to SIGTERM (default 5)
  --users=FILE              users, roles and kernel quotas (JSON; replaces --token):
                            [{"name": "ana", "token_sha256": "…", "role": "user",
                              "max_kernels": 4}, …]
  --hash-token=T            print the token_sha256 of T for a users file, and exit
  --max-kernels=N           kernels of all users together (default 0: no limit)
  --pool-size=N             pre-started kernels of the default kernelspec (default 1; 0: none)
  --pool=NAME:N             pre-started kernels of kernelspec NAME (repeatable)
  --kernel-policy=reuse|fresh  what a context or one-shot execution that names no policy
                            gets (default reuse): reuse keeps a finished context's kernel,
                            reset, for its owner's next one; fresh always starts from a kernel
                            no one used and destroys it afterwards
  --recycle-max-uses=N      contexts or one-shot runs one kernel serves under reuse
                            (default 20; 0: no limit)
  --recycle-max-lifetime=SECS  a kernel older than this is not reused (default 3600; 0: any)
  --kept-kernels=N          reset kernels kept per user for reuse (default 2; 0: none)
  --autorestart-limit=N     automatic restarts after a kernel dies, per window (default 3;
                            0: a dead kernel stays dead)
  --autorestart-window=SECS the window for --autorestart-limit (default 60)
  --cull-idle-timeout=SECS  shut down kernels idle this long (default 0: never)
  --cull-busy-timeout=SECS  shut down kernels busy this long (default 0: never)
  --kernel-max-lifetime=SECS  shut down kernels this old, whatever they do (default 0: never)
  --cull-connected          cull kernels even while clients are connected
  --cull-interval=SECS      how often the culling rules are checked (default 60)
  --culled-retention=SECS   how long a culled kernel's id answers 410 Gone (default 3600)
  --sandbox=on|off          run kernels in the sandbox (default on; off is for development
                            only: kernel code then runs as the gateway's user)
  --workdir-root=DIR        per-kernel working directories (default /var/lib/callisto/work);
                            one instance per root: it is locked, and what a crashed instance
                            left there is reaped at start
  --sandbox-uids=FIRST-LAST uids (and gids) given to sessions (default 60000-60999); give
                            each instance on a host its own range
  --memory-limit=SIZE       per kernel (default 2GiB)
  --pids-limit=N            processes and threads per kernel (default 256)
  --cpu-limit=CORES         CPU share per kernel, e.g. 0.5 (default 1)
  --cpu-time-limit=SECS     CPU seconds per kernel process (default 600)
  --file-size-limit=SIZE    largest file a kernel may write (default 1GiB)
  --open-files-limit=N      open files per kernel process (default 1024)
  --disk-quota=SIZE         total size of a kernel's working directory (default 1GiB)
  --tmp-size=SIZE           size of the kernel's /tmp and /dev/shm (default 256MiB)
  --output-budget=SIZE      per execution and stream, the text kept (head and tail, with a
                            marker for the cut) (default 1MiB)
  --result-cap=SIZE         largest rich result (one MIME value) returned inline; larger ones
                            go to a file in the context's workdir (default 5MiB)
  --execution-queue=N       executions waiting per context before 429 (default 16)
  --interrupt-grace=SECS    after a deadline's interrupt, wait this long before restarting
                            the kernel (default 5)
  --upload-limit=SIZE       largest file upload to a context (default 100MiB)
  --mcp-session-timeout=SECS  an MCP session idle this long ends and its context is deleted
                            (default 3600; 0: never)
  --mcp-max-sessions=N      MCP sessions per user; initialize beyond it answers 429 (default 64)
  --log-level=LEVEL         debug, info, warn, error (default info)
  --help                    this text

Sizes take B, KiB, MiB or GiB. A kernelspec may override the limits in kernel.json:
"metadata": {"callisto": {"limits": {"memory": "4GiB", "pids": 512, "cpu": 2, "cpu_time": 60,
"file_size": "1GiB", "open_files": 1024, "disk": "2GiB", "tmp": "256MiB"}}}
)";
}

parse_result parse_server_config(const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env) {
    server_config cfg;
    auto fail = [](std::string why) { return parse_result{std::nullopt, std::move(why), 2}; };
    bool token_given = false;

    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        if (arg == "--help" || arg == "-h") return {std::nullopt, usage_text(), 0};
        if (arg.rfind("--", 0) != 0) return fail("unexpected argument '" + arg + "'");
        std::string name = arg, value;
        bool has_value = false;
        if (auto eq = arg.find('='); eq != std::string::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
            has_value = true;
        }
        if (name == "--no-auth") {
            if (has_value) return fail("--no-auth takes no value");
            cfg.auth_enabled = false;
            continue;
        }
        if (name == "--cull-connected") {
            if (has_value) return fail("--cull-connected takes no value");
            cfg.culling.cull_connected = true;
            continue;
        }
        if (!has_value) {
            if (i + 1 >= args.size()) return fail(name + " needs a value");
            value = args[++i];
        }
        auto bad = [&](const std::string& what) {
            return fail("invalid value '" + value + "' for " + name + ": expected " + what);
        };
        if (name == "--ip") {
            if (value.empty()) return bad("an IP address");
            cfg.ip = value;
        } else if (name == "--port") {
            if (!parse_int(value, cfg.port, std::uint16_t{0}, std::uint16_t{65535}))
                return bad("a port number 0-65535");
        } else if (name == "--token") {
            if (!valid_token(value)) return bad("8-512 printable characters without spaces");
            cfg.token = value;
            token_given = true;
        } else if (name == "--threads") {
            if (!parse_int(value, cfg.threads, 1, 64)) return bad("a number 1-64");
        } else if (name == "--kernel-dir") {
            if (value.empty()) return bad("a directory");
            cfg.kernel_dirs.emplace_back(value);
        } else if (name == "--default-kernel") {
            if (value.empty()) return bad("a kernelspec name");
            cfg.default_kernel = value;
        } else if (name == "--runtime-dir") {
            if (value.empty() || value.size() > 60) return bad("a directory path of 1-60 characters");
            cfg.runtime_root = value;
        } else if (name == "--transport") {
            if (value != "ipc" && value != "tcp") return bad("ipc or tcp");
            cfg.ipc_transport = value == "ipc";
        } else if (name == "--web-root") {
            cfg.web_root = value;
        } else if (name == "--max-message-size") {
            if (!parse_size(value, cfg.max_message_bytes)) return bad("a size like 32MiB");
        } else if (name == "--users") {
            if (value.empty()) return bad("a users file");
            cfg.users_file = value;
        } else if (name == "--hash-token") {
            if (!valid_token(value)) return bad("8-512 printable characters without spaces");
            return {std::nullopt, token_auth::token_sha256(value), 0};
        } else if (name == "--max-kernels") {
            if (!parse_int(value, cfg.max_kernels, std::size_t{0}, std::size_t{100000}))
                return bad("a number 0-100000");
        } else if (name == "--kernel-policy") {
            auto policy = parse_kernel_policy(value);
            if (!policy) return bad("reuse or fresh");
            cfg.default_policy = *policy;
        } else if (name == "--recycle-max-uses") {
            if (!parse_int(value, cfg.reuse.limits.max_uses, std::size_t{0},
                           std::size_t{1000000}))
                return bad("a number 0-1000000");
        } else if (name == "--recycle-max-lifetime") {
            int secs = 0;
            if (!parse_int(value, secs, 0, 366 * 24 * 3600)) return bad("seconds (0: any age)");
            cfg.reuse.limits.max_lifetime = std::chrono::seconds(secs);
        } else if (name == "--kept-kernels") {
            if (!parse_int(value, cfg.reuse.kept_per_user, std::size_t{0}, std::size_t{64}))
                return bad("a number 0-64");
        } else if (name == "--autorestart-limit") {
            if (!parse_int(value, cfg.autorestart_limit, std::size_t{0}, std::size_t{1000}))
                return bad("a number 0-1000");
        } else if (name == "--autorestart-window") {
            int secs = 0;
            if (!parse_int(value, secs, 1, 24 * 3600)) return bad("seconds 1-86400");
            cfg.autorestart_window = std::chrono::seconds(secs);
        } else if (name == "--pool-size") {
            if (!parse_int(value, cfg.default_pool_size, std::size_t{0}, std::size_t{64}))
                return bad("a number 0-64");
        } else if (name == "--pool") {
            const auto colon = value.rfind(':');
            std::size_t size = 0;
            if (colon == std::string::npos || colon == 0 ||
                !parse_int(value.substr(colon + 1), size, std::size_t{0}, std::size_t{64}))
                return bad("NAME:N with N 0-64");
            cfg.pool_sizes[value.substr(0, colon)] = size;
        } else if (name == "--replay-buffer") {
            if (!parse_size(value, cfg.replay_buffer_bytes)) return bad("a size like 8MiB");
        } else if (name == "--ws-output-limit") {
            if (!parse_limit(value, cfg.ws_output_limit_bytes))
                return bad("a size like 8MiB, at least 1KiB, or 0 for no limit");
        } else if (name == "--ws-rich-output-limit") {
            if (!parse_limit(value, cfg.ws_rich_output_limit_bytes))
                return bad("a size like 64MiB, at least 1KiB, or 0 for no limit");
        } else if (name == "--client-queue") {
            if (!parse_size(value, cfg.client_send_queue_bytes)) return bad("a size like 256MiB");
        } else if (name == "--client-input-queue") {
            if (!parse_limit(value, cfg.client_input_queue_bytes))
                return bad("a size like 64MiB, at least 1KiB, or 0 for no limit");
        } else if (name == "--kernel-buffer") {
            if (!parse_limit(value, cfg.kernel_buffer_bytes))
                return bad("a size like 128MiB, at least 1KiB, or 0 for no limit");
        } else if (name == "--kernel-message-limit") {
            if (!parse_size(value, cfg.kernel_message_limit_bytes) ||
                cfg.kernel_message_limit_bytes < (64u << 10))
                return bad("a size like 64MiB, at least 64KiB");
        } else if (name == "--max-connections") {
            if (!parse_int(value, cfg.max_connections, std::size_t{0}, std::size_t{1000000}))
                return bad("a number 0-1000000");
        } else if (name == "--max-connections-per-address") {
            if (!parse_int(value, cfg.max_connections_per_address, std::size_t{0},
                           std::size_t{1000000}))
                return bad("a number 0-1000000");
        } else if (name == "--header-timeout") {
            int secs = 0;
            if (!parse_int(value, secs, 1, 3600)) return bad("seconds 1-3600");
            cfg.header_timeout = std::chrono::seconds(secs);
        } else if (name == "--max-body-in-flight") {
            if (!parse_limit(value, cfg.max_body_bytes_in_flight))
                return bad("a size like 256MiB, at least 1KiB, or 0 for no limit");
        } else if (name == "--ws-ping-interval") {
            int secs = 0;
            if (!parse_int(value, secs, 1, 3600)) return bad("seconds 1-3600");
            cfg.ws_ping_interval = std::chrono::seconds(secs);
        } else if (name == "--kernel-ready-timeout") {
            int secs = 0;
            if (!parse_int(value, secs, 1, 3600)) return bad("seconds 1-3600");
            cfg.kernel_ready_timeout = std::chrono::seconds(secs);
        } else if (name == "--shutdown-wait") {
            int secs = 0;
            if (!parse_int(value, secs, 0, 600)) return bad("seconds 0-600");
            cfg.shutdown_wait = std::chrono::seconds(secs);
        } else if (name == "--output-budget") {
            if (!parse_size(value, cfg.output_budget_bytes) || cfg.output_budget_bytes < 1024)
                return bad("a size like 1MiB, at least 1KiB");
        } else if (name == "--result-cap") {
            if (!parse_size(value, cfg.result_cap_bytes) || cfg.result_cap_bytes < 1024)
                return bad("a size like 5MiB, at least 1KiB");
        } else if (name == "--execution-queue") {
            if (!parse_int(value, cfg.execution_queue, std::size_t{1}, std::size_t{1024}))
                return bad("a number 1-1024");
        } else if (name == "--interrupt-grace") {
            int secs = 0;
            if (!parse_int(value, secs, 0, 600)) return bad("seconds 0-600");
            cfg.interrupt_grace = std::chrono::seconds(secs);
        } else if (name == "--upload-limit") {
            if (!parse_size(value, cfg.upload_limit_bytes)) return bad("a size like 100MiB");
        } else if (name == "--mcp-session-timeout") {
            int secs = 0;
            if (!parse_int(value, secs, 0, 7 * 24 * 3600)) return bad("seconds 0-604800");
            cfg.mcp_session_timeout = std::chrono::seconds(secs);
        } else if (name == "--mcp-max-sessions") {
            if (!parse_int(value, cfg.mcp_max_sessions, std::size_t{1}, std::size_t{10000}))
                return bad("a number 1-10000");
        } else if (name == "--sandbox") {
            if (value != "on" && value != "off") return bad("on or off");
            cfg.sandbox = value == "on";
        } else if (name == "--workdir-root") {
            if (value.empty() || value.front() != '/') return bad("an absolute directory path");
            cfg.workdir_root = value;
        } else if (name == "--sandbox-uids") {
            const auto dash = value.find('-');
            std::uint32_t first = 0, last = 0;
            if (dash == std::string::npos ||
                !parse_int(value.substr(0, dash), first, std::uint32_t{1000}, std::uint32_t{1u << 30}) ||
                !parse_int(value.substr(dash + 1), last, first, std::uint32_t{1u << 30}))
                return bad("a range FIRST-LAST of uids from 1000 up");
            cfg.sandbox_uid_first = first;
            cfg.sandbox_uid_count = last - first + 1;
        } else if (name == "--memory-limit" || name == "--file-size-limit" ||
                   name == "--disk-quota" || name == "--tmp-size") {
            std::uint64_t bytes = 0;
            if (!launcher::parse_byte_size(value, bytes)) return bad("a size like 2GiB");
            auto& field = name == "--memory-limit"      ? cfg.limits.memory_bytes
                          : name == "--file-size-limit" ? cfg.limits.file_size_bytes
                          : name == "--disk-quota"      ? cfg.limits.disk_bytes
                                                        : cfg.limits.tmp_bytes;
            field = bytes;
        } else if (name == "--pids-limit") {
            if (!parse_int(value, cfg.limits.pids, std::uint64_t{8}, std::uint64_t{1u << 22}))
                return bad("a number 8-4194304");
        } else if (name == "--open-files-limit") {
            if (!parse_int(value, cfg.limits.open_files, std::uint64_t{64}, std::uint64_t{1u << 20}))
                return bad("a number 64-1048576");
        } else if (name == "--cpu-time-limit") {
            if (!parse_int(value, cfg.limits.cpu_time_seconds, std::uint64_t{1}, std::uint64_t{1u << 30}))
                return bad("seconds from 1");
        } else if (name == "--cpu-limit") {
            char* end = nullptr;
            const double cores = std::strtod(value.c_str(), &end);
            if (value.empty() || end != value.c_str() + value.size() || !(cores >= 0.01) || cores > 1024)
                return bad("cores 0.01-1024");
            cfg.limits.cpu_cores = cores;
        } else if (name == "--cull-idle-timeout" || name == "--cull-busy-timeout" ||
                   name == "--kernel-max-lifetime" || name == "--cull-interval" ||
                   name == "--culled-retention") {
            const bool interval = name == "--cull-interval";
            int secs = 0;
            if (!parse_int(value, secs, interval ? 1 : 0, 366 * 24 * 3600))
                return bad(interval ? "seconds from 1" : "seconds (0 disables)");
            auto& field = name == "--cull-idle-timeout"   ? cfg.culling.idle_timeout
                          : name == "--cull-busy-timeout" ? cfg.culling.busy_timeout
                          : name == "--kernel-max-lifetime" ? cfg.culling.max_lifetime
                          : interval                        ? cfg.culling.interval
                                                            : cfg.culling.retention;
            field = std::chrono::seconds(secs);
        } else if (name == "--log-level") {
            if (!parse_log_level(value, cfg.log)) return bad("debug, info, warn or error");
        } else {
            return fail("unknown option " + name + " (see --help)");
        }
    }

    if (!token_given && cfg.auth_enabled) {
        if (auto it = env.find("CALLISTO_TOKEN"); it != env.end() && !it->second.empty()) {
            if (!valid_token(it->second))
                return fail("CALLISTO_TOKEN must be 8-512 printable characters without spaces");
            cfg.token = it->second;
        } else {
            cfg.token = kernelproto::random_hex(24);
            cfg.token_generated = true;
        }
    }
    if (!cfg.auth_enabled) cfg.token.clear();
    if (cfg.runtime_root.empty())
        cfg.runtime_root = "/tmp/callisto-" + std::to_string(::getpid());
    return {cfg, {}, 0};
}

}  // namespace callisto::gateway
