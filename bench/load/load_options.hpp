#pragma once
// callisto-load's command line.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace callisto::load {

enum class api_kind { jupyter, v1 };

// --url, taken apart: http:// or https://, a host name or address ([::1] for IPv6), a port
// (80 and 443 when left out), nothing after the port but an optional "/".
struct gateway_url {
    bool tls = false;
    std::string host;  // without the brackets of an IPv6 address
    std::string port;
};
struct parsed_url {
    std::optional<gateway_url> url;  // nullopt: `error` says why
    std::string error;
};
parsed_url parse_gateway_url(std::string_view text);

// The Host header's value (and a WebSocket handshake's host): host:port, an IPv6 address in
// brackets.
std::string host_header(const std::string& host, const std::string& port);

struct load_options {
    std::string host = "127.0.0.1";
    std::string port = "8888";
    bool tls = false;  // https://, and wss:// for the kernels' WebSockets
    // TLS: the PEM file of the CA to trust (empty: the system's store), or no verification at
    // all (a self-signed test certificate; never for a deployment that matters).
    std::string ca_file;
    bool insecure_skip_verify = false;
    std::string token;
    api_kind api = api_kind::jupyter;
    std::string kernel = "python3";
    int clients = 10;
    int kernels = 2;  // kernels (jupyter) or contexts (v1) the clients share, round robin
    std::chrono::seconds duration{30};
    std::chrono::seconds ramp_up{0};             // clients start evenly over this time
    std::chrono::milliseconds think{100};        // a client's pause between two executions
    std::chrono::seconds execution_timeout{60};  // no answer by then: lost
    // Snippet kind -> weight (scenario.hpp): "tiny=1" or the mixed default.
    std::map<std::string, int> mix;
    std::string json_file;  // also write the report there
    bool progress = true;   // a line on stderr each second
    bool keep_kernels = false;
    // A Jupyter WebSocket that drops mid-execution is reopened (same session, ?since= replay)
    // and the execution awaited to its deadline; false (--no-resume): a drop loses it.
    bool resume = true;
};

struct parsed_options {
    std::optional<load_options> options;  // nullopt: print `message`, exit with `exit_code`
    std::string message;
    int exit_code = 0;
};

parsed_options parse_load_options(const std::vector<std::string>& args);

}  // namespace callisto::load
