#pragma once
// Everything the server can be told, from flags and environment. Parsing is pure so every bad
// form of every flag is unit-tested.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/logger.hpp"
#include "gateway/audit/audit_log.hpp"
#include "gateway/e2b/sandbox_templates.hpp"
#include "gateway/interpreter/interpreter_settings.hpp"
#include "gateway/kernels/lifecycle/culling_policy.hpp"
#include "gateway/kernels/lifecycle/kernel_policy.hpp"
#include "gateway/kernels/session/kernel_settings.hpp"
#include "gateway/mcp/mcp_session_limits.hpp"

namespace callisto::gateway {

// Each layer's settings are held here as that layer declares them (kernels::kernel_settings,
// interpreter::interpreter_settings, ...): an option writes straight into the field its layer
// reads, and the server hands the struct over rather than copying it field by field.
struct server_config {
    std::string ip = "127.0.0.1";
    std::uint16_t port = 8888;
    std::string token;             // empty after parsing only when --no-auth was given
    bool token_generated = false;  // true when neither --token nor CALLISTO_TOKEN set it
    bool auth_enabled = true;
    int threads = 2;

    std::vector<std::filesystem::path> kernel_dirs;  // empty: the standard Jupyter paths
    std::filesystem::path web_root;  // static web UI; empty: looked for (host_defaults.hpp)
    bool web_root_off = false;       // --web-root=off: none, not even one found

    std::size_t max_message_bytes = 32u << 20;          // one WebSocket message from a client
    std::size_t max_request_body_bytes = 1u << 20;      // one REST request body
    std::size_t max_body_bytes_in_flight = 256u << 20;  // all request bodies together; 0: none
    std::size_t max_connections = 10000;                // client connections in all; 0: no limit
    std::size_t max_connections_per_address = 1000;     // ... from one client address; 0: none
    std::chrono::seconds header_timeout{10};            // a new connection's first request header
    std::size_t client_send_queue_bytes = 256u << 20;   // per WebSocket, before it is closed
    std::size_t client_input_queue_bytes = 64u << 20;   // per WebSocket, waiting for its kernel
    std::chrono::seconds ws_ping_interval{30};
    std::chrono::seconds ws_ping_timeout{90};  // a client silent this long is closed

    // Kernels: their processes, messages, restarts, sandbox limits (kernels.limits) and where
    // they live (kernels.workdir_root, kernels.runtime_root, empty until parsed: its default
    // names the serving process).
    kernels::kernel_settings kernels = [] {
        kernels::kernel_settings k;
        k.workdir_root = "/var/lib/callisto/work";
        return k;
    }();
    kernels::culling_policy culling;                // off unless a timeout is set
    std::filesystem::path users_file;               // users, roles, quotas; else --token
    std::size_t max_kernels = 0;                    // all users together; 0: no limit
    kernels::kernel_reuse reuse;                    // recycling limits, kept kernels
    std::size_t default_pool_size = 1;              // ready kernels of the default spec
    std::map<std::string, std::size_t> pool_sizes;  // --pool=NAME:N, per kernelspec
    std::chrono::seconds drain_seconds{0};  // at SIGTERM, not ready this long before stopping
    bool metrics_public = false;            // GET /metrics without a token
    // Past capacity (common/host_load.hpp): new kernels, contexts and one-shots refused 503.
    bool shed_load = true;
    std::size_t shed_cpu_pressure = 90;  // percent of PSI "some avg10": the CPU is contended
    std::size_t shed_lag_ms = 250;       // the gateway's event loop this late: work suffers
    std::size_t shed_run_queue = 4;      // tasks ready to run per CPU: new work would wait
    // TLS: HTTPS and WSS when a certificate is given; client certificates from client_ca.
    std::filesystem::path certfile;
    std::filesystem::path keyfile;
    std::filesystem::path client_ca;

    // The kernel sandbox (launcher/sandbox/sandbox.hpp). Off only for development.
    bool sandbox = true;
    std::uint32_t sandbox_uid_first = 60000;  // per-session uids: [first, first+count)
    std::uint32_t sandbox_uid_count = 1000;
    std::filesystem::path bwrap = "/usr/bin/bwrap";
    // Python kernels forked from a zygote per kernelspec (launcher/zygote/zygote_pool.hpp); the
    // program defaults to callisto-zygote beside the gateway's own binary.
    bool zygote = true;
    // Kernel records for the next gateway process to adopt the kernels this one leaves
    // running (kernels then outlive the gateway). Empty: <workdir_root>/.callisto-state when
    // sandboxed, none with --sandbox=off; state_dir_off: none.
    std::filesystem::path state_dir;
    bool state_dir_off = false;
    // SIGTERM leaves the kernels running for the next gateway, as SIGUSR2 always does.
    bool keep_kernels_on_exit = false;
    std::filesystem::path zygote_program;
    // The egress ceiling (--egress-allow): rules in canonical form (gateway/egress/
    // egress_allowlist.hpp). Empty: no kernel has any network, as without egress.
    std::vector<std::string> egress_allow;
    // Per networked kernel: connections open at once through its proxy (past it: 429), and
    // bytes per second both ways over all of them (0: no cap), so that one download cannot
    // take every other kernel's bandwidth.
    std::size_t egress_connections = 32;
    std::size_t egress_bytes_per_second = 0;

    // The interpreter API (/v1, gateway/interpreter/); its services (audit, records, metrics)
    // are the server's, filled in when it is built.
    interpreter::interpreter_settings interpreter;
    mcp::mcp_session_limits mcp;  // the MCP endpoint (/mcp, gateway/mcp/)
    // E2B's host names, "<port>-<sandbox id>.<e2b_domain>" (gateway/e2b/), lower case; empty:
    // a sandbox is named by any host of that shape, or its E2b-Sandbox-Id header.
    std::string e2b_domain;
    // E2B templates (--e2b-template): a templateID, the kernelspec it runs, its ready kernels
    // and default lifetime; names unique, kernelspecs checked at start.
    std::vector<e2b::sandbox_template> e2b_templates;
    // The audit log (gateway/audit/): one chained line per execution; off without a file.
    audit::audit_settings audit;

    log_level log = log_level::info;
    callisto::log_format log_format = callisto::log_format::text;
};

struct parse_result {
    std::optional<server_config> config;  // nullopt: print `message` and exit with exit_code
    std::string message;
    int exit_code = 0;
    // --print-config: print effective_config(config), with the host's defaults filled in
    // (with_host_defaults, gateway/server.hpp), and exit 0 instead of serving.
    bool print_config = false;
};

// Arguments after argv[0]; env is the process environment (only CALLISTO_* is read). Options
// come from a --config file (or $CALLISTO_CONFIG), then CALLISTO_<OPTION> variables, then the
// flags; the last source that sets an option wins.
parse_result parse_server_config(const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env);

// Every option's effective value by its name without "--", the token left out: what
// --print-config prints, and a --config file that reproduces this configuration. An option
// whose default the host decides (the default kernelspec, the web UI) shows what was given,
// or null, unless with_host_defaults filled it in.
nlohmann::json effective_config(const server_config& config);

std::string usage_text();

// Each option as --help documents it, for checks that the README's table says the same.
struct option_summary {
    std::string name;               // "--port"
    bool settable = false;          // false for actions: --help, --config, --hash-token, ...
    std::string default_text;       // as --help prints it: "8888", "256MiB; 0: no limit"
    bool default_in_words = false;  // the host decides it: "python3 when installed, ..."
};
std::vector<option_summary> option_summaries();

}  // namespace callisto::gateway
