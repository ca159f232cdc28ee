#include "load_options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "scenario.hpp"

namespace callisto::load {

namespace {

constexpr const char* usage = R"(usage: callisto-load [options]

Drives a Callisto (or any Jupyter-compatible) gateway with N clients over K kernels or
contexts, for a fixed time, and reports throughput, latency percentiles, lost replies,
connection errors and the server's memory and descriptors over time.

  --url=URL                the gateway: http://HOST:PORT or https://HOST:PORT (the
                           kernels' WebSockets are then wss://); default
                           http://127.0.0.1:8888
  --ca-file=FILE           https: trust the CA in this PEM file (default: the system's
                           store, /etc/ssl/certs)
  --insecure-skip-verify   https: do not verify the server's certificate at all (a
                           self-signed test certificate); never against a real deployment
  --token=T                its token (default $CALLISTO_TOKEN)
  --api=jupyter|v1         Jupyter WebSocket executions, or /v1 context executions
                           (default jupyter)
  --kernel=NAME            kernelspec (default python3)
  --clients=N              concurrent clients (default 10)
  --kernels=K              kernels (jupyter) or contexts (v1) they share (default 2)
  --duration=SECS          how long to run (default 30)
  --ramp-up=SECS           start the clients evenly over this time (default 0)
  --think-ms=MS            each client's mean pause between executions, drawn at random
                           from half to one and a half times it (default 100)
  --timeout=SECS           an execution unanswered this long is lost (default 60)
  --no-resume              a Jupyter WebSocket that drops mid-execution loses it; by
                           default it is reopened as JupyterLab does (same session,
                           ?since= replay of the output it missed, backoff 0.5 s doubling
                           to 4 s) and the execution is lost only if neither its reply nor
                           its idle status arrives within --timeout
  --mix=KIND=W,...         snippets and their weights; kinds: tiny, print, plot, fail,
                           sleep, interrupt, oneshot (default: the mixed scenario,
                           tiny=60,print=10,plot=5,fail=10,sleep=10,interrupt=3,oneshot=2)
  --json=FILE              also write the report as JSON to FILE
  --no-progress            no progress line on stderr
  --keep-kernels           leave the kernels or contexts it made (default: deleted)

Exit code: 0 when every execution was answered as expected and no connection failed,
1 when some were lost, wrong or a connection failed, 2 on bad arguments.
)";

template <class T>
bool number(const std::string& text, T& out, T low, T high) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < low || value > high)
        return false;
    out = value;
    return true;
}

bool is_port(const std::string& text) {
    int port = 0;
    return !text.empty() && text.size() <= 5 && number(text, port, 1, 65535) && text[0] != '0';
}

}  // namespace

parsed_url parse_gateway_url(std::string_view text) {
    auto fail = [](std::string why) { return parsed_url{std::nullopt, std::move(why)}; };
    gateway_url url;
    std::string_view rest;
    if (text.rfind("https://", 0) == 0) {
        url.tls = true;
        rest = text.substr(8);
    } else if (text.rfind("http://", 0) == 0) {
        rest = text.substr(7);
    } else {
        return fail("http://HOST:PORT or https://HOST:PORT");
    }
    const auto slash = rest.find('/');
    if (slash != std::string_view::npos && slash + 1 != rest.size())
        return fail("no path, query or fragment: callisto-load uses the server's own routes");
    std::string_view authority = rest.substr(0, slash);
    if (authority.find_first_of("@?#") != std::string_view::npos)
        return fail("HOST:PORT only (no user, query or fragment)");
    std::string_view port;
    if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
        const auto close = authority.find(']');
        if (close == std::string_view::npos || close == 1) return fail("an IPv6 address: [ADDR]");
        url.host = std::string(authority.substr(1, close - 1));
        const auto after = authority.substr(close + 1);
        if (!after.empty() && after.front() != ':') return fail("[ADDR]:PORT");
        if (!after.empty()) port = after.substr(1);
        if (after == ":") return fail("a port after the ':'");
    } else {
        const auto colon = authority.find(':');
        url.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port = authority.substr(colon + 1);
            if (port.empty()) return fail("a port after the ':'");
        }
    }
    if (url.host.empty()) return fail("a host: http://HOST:PORT or https://HOST:PORT");
    if (url.host.find_first_of("[] \t") != std::string::npos) return fail("a host name or address");
    url.port = port.empty() ? (url.tls ? "443" : "80") : std::string(port);
    if (!is_port(url.port)) return fail("a port from 1 to 65535");
    return {url, {}};
}

std::string host_header(const std::string& host, const std::string& port) {
    const bool ipv6 = host.find(':') != std::string::npos;
    return (ipv6 ? "[" + host + "]" : host) + ":" + port;
}

parsed_options parse_load_options(const std::vector<std::string>& args) {
    load_options o;
    if (const char* token = std::getenv("CALLISTO_TOKEN")) o.token = token;
    o.mix = default_mix();
    auto fail = [](const std::string& why) { return parsed_options{std::nullopt, why, 2}; };
    // The flags without a value: each sets one switch of the options.
    struct switch_flag {
        std::string_view name;
        bool load_options::*field;
        bool value;
    };
    static constexpr switch_flag switches[] = {
        {"--no-progress", &load_options::progress, false},
        {"--keep-kernels", &load_options::keep_kernels, true},
        {"--no-resume", &load_options::resume, false},
        {"--insecure-skip-verify", &load_options::insecure_skip_verify, true},
    };
    for (const auto& arg : args) {
        if (arg == "-h" || arg == "--help") return {std::nullopt, usage, 0};
        const auto flag = std::find_if(std::begin(switches), std::end(switches),
                                       [&](const switch_flag& f) { return f.name == arg; });
        if (flag != std::end(switches)) {
            o.*(flag->field) = flag->value;
            continue;
        }
        const auto eq = arg.find('=');
        if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
            return fail("unknown argument " + arg + " (--help lists them)");
        const std::string name = arg.substr(2, eq - 2);
        const std::string value = arg.substr(eq + 1);
        int n = 0;
        if (name == "url") {
            auto parsed = parse_gateway_url(value);
            if (!parsed.url) return fail("--url " + value + ": " + parsed.error);
            o.tls = parsed.url->tls;
            o.host = std::move(parsed.url->host);
            o.port = std::move(parsed.url->port);
        } else if (name == "ca-file") {
            if (value.empty()) return fail("--ca-file: a PEM file");
            o.ca_file = value;
        } else if (name == "token") {
            o.token = value;
        } else if (name == "api") {
            if (value != "jupyter" && value != "v1") return fail("--api: jupyter or v1");
            o.api = value == "v1" ? api_kind::v1 : api_kind::jupyter;
        } else if (name == "kernel") {
            if (value.empty()) return fail("--kernel: a kernelspec name");
            o.kernel = value;
        } else if (name == "clients") {
            if (!number(value, o.clients, 1, 100000)) return fail("--clients: 1-100000");
        } else if (name == "kernels") {
            if (!number(value, o.kernels, 1, 10000)) return fail("--kernels: 1-10000");
        } else if (name == "duration") {
            if (!number(value, n, 1, 86400)) return fail("--duration: 1-86400 seconds");
            o.duration = std::chrono::seconds(n);
        } else if (name == "ramp-up") {
            if (!number(value, n, 0, 3600)) return fail("--ramp-up: 0-3600 seconds");
            o.ramp_up = std::chrono::seconds(n);
        } else if (name == "think-ms") {
            if (!number(value, n, 0, 600000)) return fail("--think-ms: 0-600000");
            o.think = std::chrono::milliseconds(n);
        } else if (name == "timeout") {
            if (!number(value, n, 1, 3600)) return fail("--timeout: 1-3600 seconds");
            o.execution_timeout = std::chrono::seconds(n);
        } else if (name == "mix") {
            auto mix = parse_mix(value);
            if (!mix) return fail("--mix: KIND=WEIGHT,... with kinds " + snippet_kinds());
            o.mix = std::move(*mix);
        } else if (name == "json") {
            o.json_file = value;
        } else {
            return fail("unknown option --" + name + " (--help lists them)");
        }
    }
    if (o.token.empty()) return fail("no token: --token=T or $CALLISTO_TOKEN");
    if (!o.tls && (!o.ca_file.empty() || o.insecure_skip_verify))
        return fail("--ca-file and --insecure-skip-verify are for an https:// --url");
    if (!o.ca_file.empty() && o.insecure_skip_verify)
        return fail("--ca-file verifies the server, --insecure-skip-verify does not: one of them");
    return {o, {}, 0};
}

}  // namespace callisto::load
