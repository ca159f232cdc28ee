#include "load_options.hpp"

#include <charconv>
#include <cstdlib>

#include "scenario.hpp"

namespace callisto::load {

namespace {

constexpr const char* usage = R"(usage: callisto-load [options]

Drives a Callisto (or any Jupyter-compatible) gateway with N clients over K kernels or
contexts, for a fixed time, and reports throughput, latency percentiles, lost replies,
connection errors and the server's memory and descriptors over time.

  --url=http://HOST:PORT   the gateway (default http://127.0.0.1:8888)
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

}  // namespace

parsed_options parse_load_options(const std::vector<std::string>& args) {
    load_options o;
    if (const char* token = std::getenv("CALLISTO_TOKEN")) o.token = token;
    o.mix = default_mix();
    auto fail = [](const std::string& why) { return parsed_options{std::nullopt, why, 2}; };
    for (const auto& arg : args) {
        if (arg == "-h" || arg == "--help") return {std::nullopt, usage, 0};
        if (arg == "--no-progress") {
            o.progress = false;
            continue;
        }
        if (arg == "--keep-kernels") {
            o.keep_kernels = true;
            continue;
        }
        const auto eq = arg.find('=');
        if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
            return fail("unknown argument " + arg + " (--help lists them)");
        const std::string name = arg.substr(2, eq - 2);
        const std::string value = arg.substr(eq + 1);
        int n = 0;
        if (name == "url") {
            const std::string scheme = "http://";
            if (value.rfind(scheme, 0) != 0) return fail("--url: http://HOST:PORT");
            const auto hostport =
                value.substr(scheme.size(), value.find('/', scheme.size()) - scheme.size());
            const auto colon = hostport.rfind(':');
            if (colon == std::string::npos || colon == 0 || colon + 1 == hostport.size())
                return fail("--url: http://HOST:PORT");
            o.host = hostport.substr(0, colon);
            o.port = hostport.substr(colon + 1);
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
    return {o, {}, 0};
}

}  // namespace callisto::load
