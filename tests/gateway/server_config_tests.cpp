#include "gateway/server_config.hpp"

#include <unistd.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/support/source_file.hpp"

using namespace callisto::gateway;
using namespace std::chrono_literals;
using callisto::test::source_file;

namespace {
parse_result parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    return parse_server_config(args, env);
}

// Checks that the parser refuses `args` as a bad command line (no config, exit code 2) with a
// message holding each of `says`, or some message when none is given.
void check_refused(const std::vector<std::string>& args,
                   std::initializer_list<std::string> says = {}) {
    INFO("refused: " << args.front());
    const auto r = parse(args);
    CHECK_FALSE(r.config);
    CHECK(r.exit_code == 2);
    CHECK_FALSE(r.message.empty());
    for (const auto& part : says)
        CHECK_MESSAGE(r.message.find(part) != std::string::npos, r.message);
}

// The flag of a --name=value argument, which its refusal names.
std::string flag_of(const std::string& argument) { return argument.substr(0, argument.find('=')); }
}  // namespace

TEST_CASE("config defaults serve on loopback with a generated token") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->ip == "127.0.0.1");
    CHECK(r.config->port == 8888);
    CHECK(r.config->token.size() == 48);
    CHECK(r.config->token_generated);
    CHECK(r.config->auth_enabled);
    CHECK(r.config->kernels.ipc_transport);
}

TEST_CASE("config takes flags in both --name=value and --name value forms") {
    auto r = parse({"--ip=0.0.0.0", "--port", "9000", "--token=secret-token", "--threads=4",
                    "--max-message-size=1MiB", "--transport", "tcp", "--log-level=debug"});
    REQUIRE(r.config);
    CHECK(r.config->ip == "0.0.0.0");
    CHECK(r.config->port == 9000);
    CHECK(r.config->token == "secret-token");
    CHECK_FALSE(r.config->token_generated);
    CHECK(r.config->threads == 4);
    CHECK(r.config->max_message_bytes == 1u << 20);
    CHECK_FALSE(r.config->kernels.ipc_transport);
}

TEST_CASE("config reads the token from CALLISTO_TOKEN, the flag winning") {
    CHECK(parse({}, {{"CALLISTO_TOKEN", "from-environment"}}).config->token == "from-environment");
    CHECK(
        parse({"--token=from-the-flag"}, {{"CALLISTO_TOKEN", "from-environment"}}).config->token ==
        "from-the-flag");
    CHECK(parse({"--no-auth"}).config->token.empty());
}

TEST_CASE("config rejects every bad form with a message naming the flag") {
    for (std::string bad : {"--port=70000",
                            "--port=abc",
                            "--port=",
                            "--port",
                            "--threads=0",
                            "--token=short",
                            "--token=has space in it",
                            "--transport=udp",
                            "--max-message-size=12XB",
                            "--max-message-size=0",
                            "--log-level=loud",
                            "--frobnicate=1",
                            "positional",
                            "--no-auth=yes",
                            "--ws-ping-interval=0",
                            "--max-connections=-1",
                            "--max-connections-per-address=x",
                            "--header-timeout=0",
                            "--max-body-in-flight=10",
                            "--kernel-buffer=1B",
                            "--kernel-message-limit=1KiB",
                            "--client-input-queue=big"})
        check_refused({bad});
    CHECK(parse({"--port=x"}).message.find("--port") != std::string::npos);
    CHECK_FALSE(parse({}, {{"CALLISTO_TOKEN", "a b"}}).config);
}

TEST_CASE("config --help prints usage and exits 0") {
    auto r = parse({"--help"});
    CHECK_FALSE(r.config);
    CHECK(r.exit_code == 0);
    CHECK(r.message.find("--token") != std::string::npos);
}

TEST_CASE("config parses the orchestration flags") {
    auto r = parse({"--cull-idle-timeout=600", "--cull-busy-timeout=3600",
                    "--kernel-max-lifetime=86400", "--cull-connected", "--cull-interval=30",
                    "--culled-retention=60", "--pool-size=2", "--pool=R:1", "--max-kernels=40",
                    "--autorestart-limit=0", "--autorestart-window=120", "--replay-buffer=1MiB",
                    "--users=/etc/callisto/users.json"});
    REQUIRE(r.config);
    const auto& c = *r.config;
    CHECK(c.culling.idle_timeout.count() == 600);
    CHECK(c.culling.busy_timeout.count() == 3600);
    CHECK(c.culling.max_lifetime.count() == 86400);
    CHECK(c.culling.cull_connected);
    CHECK(c.culling.interval.count() == 30);
    CHECK(c.culling.retention.count() == 60);
    CHECK(c.default_pool_size == 2);
    CHECK(c.pool_sizes.at("R") == 1);
    CHECK(c.max_kernels == 40);
    CHECK(c.kernels.autorestart_limit == 0);
    CHECK(c.kernels.autorestart_window.count() == 120);
    CHECK(c.kernels.replay_buffer_bytes == 1u << 20);
    CHECK(c.users_file == "/etc/callisto/users.json");
}

TEST_CASE("config rejects bad orchestration flags with a message") {
    for (std::string bad :
         {"--cull-idle-timeout=-1", "--cull-idle-timeout=soon", "--cull-interval=0",
          "--cull-connected=yes", "--pool=python3", "--pool=:3", "--pool=python3:x",
          "--pool-size=65", "--max-kernels=x", "--autorestart-limit=-2", "--autorestart-window=0",
          "--replay-buffer=1XB", "--users=", "--hash-token=short"})
        check_refused({bad});
}

TEST_CASE("config --hash-token prints the SHA-256 for a users file and exits 0") {
    auto r = parse({"--hash-token=abcdefgh"});
    CHECK_FALSE(r.config);
    CHECK(r.exit_code == 0);
    CHECK(r.message == "9c56cc51b374c3ba189210d5b6d4bf57790d351c96c47c02190ecf1e430635ab");
}

TEST_CASE("config turns the sandbox on by default with sensible limits") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->sandbox);
    CHECK(r.config->kernels.limits.memory_bytes == 2ull << 30);
    CHECK(r.config->kernels.limits.pids == 256);
    CHECK(r.config->sandbox_uid_first >= 1000);
}

TEST_CASE("config takes the sandbox flags and limits") {
    auto r = parse({"--sandbox=off", "--memory-limit=512MiB", "--pids-limit=64", "--cpu-limit=0.5",
                    "--cpu-time-limit=30", "--file-size-limit=10MiB", "--open-files-limit=256",
                    "--disk-quota=100MiB", "--tmp-size=32MiB", "--workdir-root=/srv/work",
                    "--sandbox-uids=70000-70099"});
    REQUIRE(r.config);
    CHECK_FALSE(r.config->sandbox);
    CHECK(r.config->kernels.limits.memory_bytes == 512u << 20);
    CHECK(r.config->kernels.limits.pids == 64);
    CHECK(r.config->kernels.limits.cpu_cores == doctest::Approx(0.5));
    CHECK(r.config->kernels.limits.cpu_time_seconds == 30);
    CHECK(r.config->kernels.limits.file_size_bytes == 10u << 20);
    CHECK(r.config->kernels.limits.open_files == 256);
    CHECK(r.config->kernels.limits.disk_bytes == 100u << 20);
    CHECK(r.config->kernels.limits.tmp_bytes == 32u << 20);
    CHECK(r.config->kernels.workdir_root == "/srv/work");
    CHECK(r.config->sandbox_uid_first == 70000);
    CHECK(r.config->sandbox_uid_count == 100);
}

TEST_CASE("config rejects bad sandbox flags naming the flag") {
    for (std::string bad :
         {"--sandbox=maybe", "--memory-limit=2GB", "--pids-limit=0", "--cpu-limit=0",
          "--cpu-limit=x", "--sandbox-uids=0-10", "--sandbox-uids=70000-60000",
          "--workdir-root=relative", "--disk-quota=0"})
        check_refused({bad}, {flag_of(bad)});
}

TEST_CASE("config parses the interpreter API flags") {
    auto r = parse({"--output-budget=64KiB", "--result-cap=1MiB", "--execution-queue=4",
                    "--interrupt-grace=2", "--upload-limit=10MiB"});
    REQUIRE(r.config);
    const auto& c = *r.config;
    CHECK(c.interpreter.text_budget_bytes == 64u << 10);
    CHECK(c.interpreter.result_cap_bytes == 1u << 20);
    CHECK(c.interpreter.queue_limit == 4);
    CHECK(c.interpreter.interrupt_grace == std::chrono::seconds(2));
    CHECK(c.interpreter.max_upload_bytes == 10u << 20);
    auto d = parse({});
    REQUIRE(d.config);
    CHECK(d.config->interpreter.text_budget_bytes == 1u << 20);
    CHECK(d.config->interpreter.queue_limit == 16);
}

TEST_CASE("config rejects bad interpreter API flags with a message") {
    for (std::string bad : {"--output-budget=10", "--output-budget=big", "--result-cap=0",
                            "--execution-queue=0", "--execution-queue=2000", "--interrupt-grace=-1",
                            "--interrupt-grace=601", "--upload-limit=1TB"})
        check_refused({bad});
}

TEST_CASE("config parses the MCP flags and rejects their bad forms") {
    auto r = parse({"--mcp-session-timeout=0", "--mcp-max-sessions=3"});
    REQUIRE(r.config);
    CHECK(r.config->mcp.idle_timeout == std::chrono::seconds(0));
    CHECK(r.config->mcp.max_per_user == 3);
    auto d = parse({});
    REQUIRE(d.config);
    CHECK(d.config->mcp.idle_timeout == std::chrono::seconds(3600));
    CHECK(d.config->mcp.max_per_user == 64);
    for (std::string bad :
         {"--mcp-session-timeout=-1", "--mcp-session-timeout=1h", "--mcp-session-timeout=604801",
          "--mcp-max-sessions=0", "--mcp-max-sessions=10001", "--mcp-max-sessions=many"}) {
        auto b = parse({bad});
        CAPTURE(bad);
        CHECK_FALSE(b.config);
        CHECK(b.exit_code == 2);
        CHECK(b.message.find(bad.substr(0, bad.find('='))) != std::string::npos);
    }
}

TEST_CASE("config parses the WebSocket output limits; 0 means none") {
    auto d = parse({});
    REQUIRE(d.config);
    CHECK(d.config->kernels.ws_output_limit_bytes == 8u << 20);
    CHECK(d.config->kernels.ws_rich_output_limit_bytes == 64u << 20);
    auto r = parse({"--ws-output-limit=1MiB", "--ws-rich-output-limit", "1024"});
    REQUIRE(r.config);
    CHECK(r.config->kernels.ws_output_limit_bytes == 1u << 20);
    CHECK(r.config->kernels.ws_rich_output_limit_bytes == 1024);
    auto off = parse({"--ws-output-limit=0", "--ws-rich-output-limit=0"});
    REQUIRE(off.config);
    CHECK(off.config->kernels.ws_output_limit_bytes == 0);
    CHECK(off.config->kernels.ws_rich_output_limit_bytes == 0);
}

TEST_CASE("config rejects bad WebSocket output limits naming the flag") {
    for (std::string bad :
         {"--ws-output-limit=1023", "--ws-output-limit=-1", "--ws-output-limit=8MB",
          "--ws-output-limit=", "--ws-output-limit=00", "--ws-output-limit=0KiB",
          "--ws-rich-output-limit=lots", "--ws-rich-output-limit=2TB",
          "--ws-rich-output-limit=2048TiB", "--ws-rich-output-limit=10"})
        check_refused({bad}, {flag_of(bad)});
    auto missing = parse({"--ws-output-limit"});
    CHECK_FALSE(missing.config);
    CHECK(missing.exit_code == 2);
}

TEST_CASE("config reads the hardening limits") {
    auto c = parse({"--max-connections=50", "--max-connections-per-address=5", "--header-timeout=3",
                    "--max-body-in-flight=64MiB", "--kernel-buffer=32MiB",
                    "--kernel-message-limit=8MiB", "--client-input-queue=0"})
                 .config;
    REQUIRE(c);
    CHECK(c->max_connections == 50);
    CHECK(c->max_connections_per_address == 5);
    CHECK(c->header_timeout == std::chrono::seconds(3));
    CHECK(c->max_body_bytes_in_flight == (64u << 20));
    CHECK(c->kernels.kernel_buffer_bytes == (32u << 20));
    CHECK(c->kernels.kernel_message_limit_bytes == (8u << 20));
    CHECK(c->client_input_queue_bytes == 0);
    auto defaults = parse({}).config;
    REQUIRE(defaults);
    CHECK(defaults->max_body_bytes_in_flight == (256u << 20));
    CHECK(defaults->kernels.kernel_buffer_bytes == (128u << 20));
}

TEST_CASE("config --help lists exactly the options the parser knows") {
    const std::string usage = usage_text();
    std::size_t listed = 0;
    for (std::size_t at = usage.find("\n  --"); at != std::string::npos;
         at = usage.find("\n  --", at + 1)) {
        const auto end = usage.find_first_of("= \n", at + 3);
        const std::string flag = usage.substr(at + 3, end - at - 3);
        CAPTURE(flag);
        ++listed;
        // Known: whatever else is wrong with an empty value, it is not an unknown option.
        auto r = parse({flag + "="});
        CHECK(r.message.find("unknown option") == std::string::npos);
    }
    CHECK(listed > 60);
    CHECK(parse({"--no-such-flag=1"}).message.find("unknown option --no-such-flag") !=
          std::string::npos);
}

TEST_CASE("config refuses an option swallowed as the value of the one before it") {
    auto r = parse({"--token", "--port=0"});
    CHECK_FALSE(r.config);
    CHECK(r.message == "--token needs a value (--port=0 is an option)");
    CHECK(parse({"--port"}).message == "--port needs a value");
    CHECK(parse({"--no-auth=yes"}).message == "--no-auth takes no value");
    CHECK(parse({"-h"}).exit_code == 0);
}

TEST_CASE("config takes localhost for the loopback address and refuses what is not an address") {
    CHECK(parse({"--ip=localhost"}).config->ip == "127.0.0.1");
    CHECK(parse({"--ip=::1"}).config->ip == "::1");
    CHECK(parse({"--ip=0.0.0.0"}).config->ip == "0.0.0.0");
    auto r = parse({"--ip=example.com"});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("expected an IP address") != std::string::npos);
}

TEST_CASE("config --version prints the version and exits 0") {
    auto r = parse({"--version"});
    CHECK_FALSE(r.config);
    CHECK(r.exit_code == 0);
    CHECK(r.message.rfind("callisto ", 0) == 0);
}

TEST_CASE("config parses the kernel policy and recycling flags") {
    auto d = parse({}).config;
    REQUIRE(d);
    CHECK(d->interpreter.default_policy == kernels::kernel_policy::reuse);
    CHECK(d->reuse.limits.max_uses == 20);
    CHECK(d->reuse.limits.max_lifetime == 3600s);
    CHECK(d->reuse.kept_per_user == 2);
    auto c = parse({"--kernel-policy=fresh", "--recycle-max-uses=0", "--recycle-max-lifetime=90",
                    "--kept-kernels=0"})
                 .config;
    REQUIRE(c);
    CHECK(c->interpreter.default_policy == kernels::kernel_policy::fresh);
    CHECK(c->reuse.limits.max_uses == 0);
    CHECK(c->reuse.limits.max_lifetime == 90s);
    CHECK(c->reuse.kept_per_user == 0);
}

TEST_CASE("config rejects bad kernel policy and recycling flags, naming the flag") {
    for (std::string bad : {"--kernel-policy=", "--kernel-policy=always", "--recycle-max-uses=-1",
                            "--recycle-max-uses=many", "--recycle-max-lifetime=-5",
                            "--recycle-max-lifetime=1h", "--kept-kernels=65", "--kept-kernels="})
        check_refused({bad}, {flag_of(bad)});
}

namespace {
// A config file in a fresh temporary directory, removed with the object.
struct config_file {
    std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                ("callisto-config-test-" + std::to_string(::getpid()));
    std::filesystem::path path = dir / "callisto.json";
    explicit config_file(const std::string& text) {
        std::filesystem::create_directories(dir);
        std::ofstream(path) << text;
    }
    ~config_file() { std::filesystem::remove_all(dir); }
    std::string flag() const { return "--config=" + path.string(); }
};
}  // namespace

TEST_CASE("config reads a JSON file, then CALLISTO_ variables, then flags; the last one wins") {
    config_file file(R"({"port": 9001, "max-kernels": 7, "memory-limit": "1GiB",
                         "pool": ["python3:2", "other:1"], "cull-connected": true,
                         "no-auth": false, "log-level": "debug", "token": null})");
    auto from_file = parse({file.flag()});
    REQUIRE(from_file.config);
    CHECK(from_file.config->port == 9001);
    CHECK(from_file.config->max_kernels == 7);
    CHECK(from_file.config->kernels.limits.memory_bytes == (1ull << 30));
    CHECK(from_file.config->pool_sizes ==
          std::map<std::string, std::size_t>{{"python3", 2}, {"other", 1}});
    CHECK(from_file.config->culling.cull_connected);
    CHECK(from_file.config->auth_enabled);
    CHECK(from_file.config->token_generated);  // null: unset, as --print-config shows it
    CHECK(from_file.config->log == callisto::log_level::debug);

    std::map<std::string, std::string> env{{"CALLISTO_MAX_KERNELS", "10"},
                                           {"CALLISTO_POOL", "r:3"},
                                           {"CALLISTO_PORT", "9002"},
                                           {"CALLISTO_URL", "http://not-an-option"}};
    auto with_env = parse({file.flag()}, env);
    REQUIRE(with_env.config);
    CHECK(with_env.config->max_kernels == 10);
    CHECK(with_env.config->port == 9002);
    // A list from a later source replaces the earlier one.
    CHECK(with_env.config->pool_sizes == std::map<std::string, std::size_t>{{"r", 3}});
    CHECK(with_env.config->kernels.limits.memory_bytes == (1ull << 30));

    auto with_flags = parse({file.flag(), "--port=9003", "--pool=a:1", "--pool=b:2"}, env);
    REQUIRE(with_flags.config);
    CHECK(with_flags.config->port == 9003);
    CHECK(with_flags.config->max_kernels == 10);
    CHECK(with_flags.config->pool_sizes == std::map<std::string, std::size_t>{{"a", 1}, {"b", 2}});

    // $CALLISTO_CONFIG names the file when no --config does.
    auto by_env = parse({}, {{"CALLISTO_CONFIG", file.path.string()}});
    REQUIRE(by_env.config);
    CHECK(by_env.config->port == 9001);
}

TEST_CASE("config takes switches from CALLISTO_ variables as 1 or 0") {
    CHECK_FALSE(parse({}, {{"CALLISTO_NO_AUTH", "1"}}).config->auth_enabled);
    CHECK(parse({}, {{"CALLISTO_NO_AUTH", "0"}}).config->auth_enabled);
    CHECK(parse({}, {{"CALLISTO_CULL_CONNECTED", "true"}}).config->culling.cull_connected);
    auto bad = parse({}, {{"CALLISTO_NO_AUTH", "maybe"}});
    CHECK_FALSE(bad.config);
    CHECK(bad.message.find("CALLISTO_NO_AUTH") != std::string::npos);
}

TEST_CASE("config refuses a bad file or value, naming the option, the source and the value") {
    struct bad_case {
        const char* text;
        const char* expected;  // in the message
    };
    for (auto c : std::vector<bad_case>{
             {R"({"port": 70000})", "invalid value '70000' for port in "},
             {R"({"max-kernel": 3})", "unknown option 'max-kernel' in config file"},
             {R"({"port": "eighty"})", "for port in "},
             {R"({"no-auth": "yes"})", "no-auth in "},
             {R"({"port": [1, 2]})", "port in "},
             {R"({"pool": [{"a": 1}]})", "pool in "},
             {R"({"help": true})", "help cannot be set in a config file"},
             {R"({"config": "other.json"})", "config cannot be set in a config file"},
             {R"([1, 2])", "must hold a JSON object"},
             {R"({"port": )", "is not valid JSON"},
         }) {
        CAPTURE(c.text);
        config_file file(c.text);
        check_refused({file.flag()}, {c.expected});
    }
    auto missing = parse({"--config=/nonexistent/callisto.json"});
    CHECK_FALSE(missing.config);
    CHECK(missing.message.find("/nonexistent/callisto.json") != std::string::npos);

    auto env = parse({}, {{"CALLISTO_MAX_KERNELS", "lots"}});
    CHECK_FALSE(env.config);
    CHECK(env.message ==
          "invalid value 'lots' for CALLISTO_MAX_KERNELS: expected a number 0-100000");
}

TEST_CASE("config never repeats a token in an error or in --print-config") {
    auto bad = parse({}, {{"CALLISTO_TOKEN", "secret with spaces"}});
    CHECK_FALSE(bad.config);
    CHECK(bad.message.find("secret") == std::string::npos);
    CHECK(bad.message.find("CALLISTO_TOKEN") != std::string::npos);

    // Left out, set or not: "<set, hidden>" was no value a --config file takes back, and a
    // generated token was shown as set.
    for (const auto& args :
         {std::vector<std::string>{"--token=very-secret-token", "--print-config"},
          std::vector<std::string>{"--print-config"}}) {
        auto printed = parse(args);
        REQUIRE(printed.config);
        CHECK(printed.print_config);
        CHECK(printed.exit_code == 0);
        const auto json = effective_config(*printed.config);
        CHECK(json.dump().find("very-secret-token") == std::string::npos);
        CHECK(json.dump().find(printed.config->token) == std::string::npos);
        CHECK_FALSE(json.contains("token"));
    }
}

TEST_CASE("--print-config's output read back with --config prints the same, token or none") {
    // As `callisto --print-config > f.json; callisto --config=f.json --print-config` does.
    for (const auto& env : {std::map<std::string, std::string>{{"CALLISTO_TOKEN", "a-set-token-1"}},
                            std::map<std::string, std::string>{}}) {
        auto first = parse({"--print-config", "--workdir-root=/srv/work", "--pool=python3:2"}, env);
        REQUIRE(first.print_config);
        const std::string printed = effective_config(*first.config).dump(2);
        CHECK(nlohmann::json::parse(printed)["state-dir"] == "/srv/work/.callisto-state");
        config_file file(printed);
        auto second = parse({file.flag(), "--print-config"}, env);
        CAPTURE(second.message);
        REQUIRE(second.print_config);
        CHECK(effective_config(*second.config).dump(2) == printed);
    }
}

TEST_CASE("--print-config shows every option's effective value, and reads back the same") {
    auto r = parse({"--print-config", "--port=9100", "--memory-limit=3GiB", "--pool=python3:2",
                    "--cull-idle-timeout=600", "--sandbox=off", "--no-auth"},
                   {{"CALLISTO_MAX_KERNELS", "12"}});
    REQUIRE(r.config);
    REQUIRE(r.print_config);
    REQUIRE(r.exit_code == 0);
    auto shown = effective_config(*r.config);
    CHECK(shown["port"] == 9100);
    CHECK(shown["memory-limit"] == "3GiB");
    CHECK(shown["pool"] == nlohmann::json::array({"python3:2"}));
    CHECK(shown["cull-idle-timeout"] == 600);
    CHECK(shown["sandbox"] == "off");
    CHECK(shown["no-auth"] == true);
    CHECK(shown["max-kernels"] == 12);
    CHECK(shown["client-queue"] == "256MiB");
    CHECK(shown["kernel-ready-timeout"] == 60);
    CHECK(shown.contains("help") == false);
    // Every option that is not an action or the token is there: each --help line starting
    // with "  --".
    std::size_t listed = 0;
    for (const char* left_out :
         {"help", "version", "hash-token", "config", "print-config", "token"})
        CHECK_FALSE(shown.contains(left_out));
    std::istringstream usage(usage_text());
    for (std::string line; std::getline(usage, line);)
        if (line.rfind("  --", 0) == 0) ++listed;
    CHECK(shown.size() == listed - 6);
    // The runtime root's default names the serving process: shown unset, not this one's.
    CHECK(shown["runtime-dir"] == nullptr);

    // The printed configuration, given back as a file, is the same configuration.
    config_file file(shown.dump());
    auto again = parse({file.flag(), "--print-config"});
    CAPTURE(again.message);
    REQUIRE(again.print_config);
    CHECK(effective_config(*again.config) == shown);
}

TEST_CASE(
    "--state-dir: under the workdir root when sandboxed, none without a sandbox, or as given") {
    auto r = parse({"--workdir-root=/srv/work"});
    REQUIRE(r.config);
    CHECK(r.config->state_dir == "/srv/work/.callisto-state");
    r = parse({"--sandbox=off"});
    REQUIRE(r.config);
    CHECK(r.config->state_dir.empty());
    r = parse({"--sandbox=off", "--state-dir=/var/lib/callisto/state"});
    REQUIRE(r.config);
    CHECK(r.config->state_dir == "/var/lib/callisto/state");
    r = parse({"--state-dir=off"});
    REQUIRE(r.config);
    CHECK(r.config->state_dir.empty());
    CHECK(r.config->state_dir_off);
}

TEST_CASE("--state-dir and --keep-kernels-on-exit refuse what cannot work") {
    auto r = parse({"--state-dir=relative/dir"});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("--state-dir") != std::string::npos);
    CHECK(r.message.find("an absolute directory path or off") != std::string::npos);
    r = parse({"--state-dir=off", "--keep-kernels-on-exit=on"});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("--keep-kernels-on-exit needs --state-dir") != std::string::npos);
    r = parse({"--keep-kernels-on-exit=on"});
    REQUIRE(r.config);
    CHECK(r.config->keep_kernels_on_exit);
    CHECK_FALSE(r.config->kernels.state_required);

    r = parse({"--state-dir=off", "--state-required=on"});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("--state-required needs --state-dir") != std::string::npos);
    r = parse({"--state-required=maybe"});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("--state-required") != std::string::npos);
    r = parse({"--state-required=on"});
    REQUIRE(r.config);
    CHECK(r.config->kernels.state_required);
}

TEST_CASE("config: an execution deadline by default, within a maximum, and their bad forms") {
    auto d = parse({});
    REQUIRE(d.config);
    CHECK(d.config->interpreter.request_limits.default_timeout == 600s);
    CHECK(d.config->interpreter.request_limits.max_timeout == 86400s);
    auto r = parse({"--execution-timeout=0", "--max-execution-timeout=60"});
    REQUIRE(r.config);
    CHECK(r.config->interpreter.request_limits.default_timeout == 0s);
    CHECK(r.config->interpreter.request_limits.max_timeout == 60s);
    auto over = parse({"--execution-timeout=120", "--max-execution-timeout=60"});
    CHECK_FALSE(over.config);
    CHECK(over.message ==
          "--execution-timeout (120 s) must not exceed --max-execution-timeout (60 s)");
    for (std::string bad :
         {"--execution-timeout=-1", "--execution-timeout=10m", "--execution-timeout=604801",
          "--max-execution-timeout=0", "--max-execution-timeout=x"}) {
        CAPTURE(bad);
        auto b = parse({bad});
        CHECK_FALSE(b.config);
        CHECK(b.message.find(bad.substr(0, bad.find('='))) != std::string::npos);
    }
}

TEST_CASE("--web-root takes a directory or off; empty is refused, unset is looked for") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->web_root.empty());
    CHECK_FALSE(r.config->web_root_off);
    r = parse({"--web-root=/srv/ui"});
    REQUIRE(r.config);
    CHECK(r.config->web_root == "/srv/ui");
    CHECK(effective_config(*r.config)["web-root"] == "/srv/ui");
    r = parse({"--web-root=off"});
    REQUIRE(r.config);
    CHECK(r.config->web_root.empty());
    CHECK(r.config->web_root_off);
    CHECK(effective_config(*r.config)["web-root"] == "off");
    // The last source wins: a flag's directory over a variable's off.
    r = parse({"--web-root=/srv/ui"}, {{"CALLISTO_WEB_ROOT", "off"}});
    REQUIRE(r.config);
    CHECK(r.config->web_root == "/srv/ui");
    CHECK_FALSE(r.config->web_root_off);
    check_refused({"--web-root="}, {"--web-root"});
}

TEST_CASE(
    "--audit-key: in the state directory unless given; without either, --audit-log is "
    "refused") {
    auto r = parse({"--workdir-root=/srv/work", "--audit-log=/var/log/callisto/audit.log"});
    REQUIRE(r.config);
    CHECK(r.config->audit.key_file == "/srv/work/.callisto-state/audit.key");
    r = parse({"--audit-log=/var/log/a.log", "--audit-key=/etc/callisto/audit.key"});
    REQUIRE(r.config);
    CHECK(r.config->audit.key_file == "/etc/callisto/audit.key");
    r = parse({"--sandbox=off", "--audit-log=/var/log/a.log"});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("--audit-log needs --audit-key FILE") != std::string::npos);
    r = parse({"--sandbox=off", "--audit-log=/var/log/a.log", "--audit-key=/root/a.key"});
    REQUIRE(r.config);
    r = parse({"--sandbox=off"});  // no audit log: no key needed
    REQUIRE(r.config);
    CHECK(r.config->audit.key_file.empty());
    r = parse({"--audit-key="});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("--audit-key") != std::string::npos);
}

TEST_CASE("--audit-code-limit takes a size, 64KiB by default, and refuses bad forms") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->audit.code_limit == 64 * 1024);
    r = parse({"--audit-code-limit=1MiB"});
    REQUIRE(r.config);
    CHECK(r.config->audit.code_limit == 1024 * 1024);
    for (std::string bad : {"0", "-1", "lots", "64KB", "", "2048TiB"}) {
        r = parse({"--audit-code-limit=" + bad});
        CHECK_MESSAGE(!r.config, bad);
        CHECK(r.message.find("--audit-code-limit") != std::string::npos);
    }
}

namespace {

std::vector<std::string> split(const std::string& text, const std::string& by) {
    std::vector<std::string> out;
    std::size_t at = 0;
    for (auto next = text.find(by); next != std::string::npos; next = text.find(by, at)) {
        out.push_back(text.substr(at, next - at));
        at = next + by.size();
    }
    out.push_back(text.substr(at));
    return out;
}

// A README default as --help prints it: no backquotes, no unit ("30 s"), no remark in
// parentheses ("0 (no limit)"), no surrounding spaces.
std::string plain_default(std::string text) {
    std::erase(text, '`');
    if (auto paren = text.find(" ("); paren != std::string::npos) text.erase(paren);
    for (const char* unit : {" s", " ms", " %"})
        if (text.size() > std::strlen(unit) && text.ends_with(unit))
            text.erase(text.size() - std::strlen(unit));
    while (!text.empty() && text.back() == ' ') text.pop_back();
    while (!text.empty() && text.front() == ' ') text.erase(0, 1);
    return text;
}

}  // namespace

TEST_CASE("the README names every option, and its table gives the defaults --help prints") {
    const std::string readme = source_file("README.md");
    REQUIRE_FALSE(readme.empty());
    std::map<std::string, option_summary> declared;
    // Named as an option, not as the start of a longer one (--cull-idle in --cull-idle-timeout).
    const auto named = [&](const std::string& name) {
        for (auto at = readme.find(name); at != std::string::npos; at = readme.find(name, at + 1)) {
            const char next = at + name.size() < readme.size() ? readme[at + name.size()] : ' ';
            if (!std::isalnum(static_cast<unsigned char>(next)) && next != '-') return true;
        }
        return false;
    };
    for (const auto& o : option_summaries()) {
        declared[o.name] = o;
        CHECK_MESSAGE(named(o.name), o.name << " is not in README.md");
    }
    // The options table: "| `--a`, `--b=X` | `d1`, d2 | meaning |" rows after "| flag |".
    const auto table = readme.find("| flag | default | meaning |");
    REQUIRE(table != std::string::npos);
    std::istringstream rows(readme.substr(table));
    std::size_t checked = 0;
    std::string row;
    std::getline(rows, row);  // the header
    std::getline(rows, row);  // |---|
    while (std::getline(rows, row) && row.rfind("| `--", 0) == 0) {
        const auto cells = split(row.substr(2), " | ");
        REQUIRE(cells.size() >= 3);
        std::vector<std::string> flags;
        for (auto flag : split(cells[0], ", ")) {
            std::erase(flag, '`');
            if (auto eq = flag.find('='); eq != std::string::npos) flag.erase(eq);
            flags.push_back(flag);
        }
        CAPTURE(row);
        bool in_words = false;  // defaults the host decides are described, not compared
        for (const auto& flag : flags) {
            REQUIRE_MESSAGE(declared.count(flag), flag << " in README.md is no option");
            in_words = in_words || declared[flag].default_in_words || !declared[flag].settable;
        }
        if (in_words) continue;
        const auto defaults = split(cells[1], ", ");
        // One default per flag, or one for them all.
        REQUIRE((defaults.size() == flags.size() || defaults.size() == 1));
        for (std::size_t i = 0; i < flags.size(); ++i) {
            CAPTURE(flags[i]);
            const auto& o = declared[flags[i]];
            const std::string expected = plain_default(split(o.default_text, ";")[0]);
            CHECK(plain_default(defaults[defaults.size() == 1 ? 0 : i]) ==
                  plain_default(split(expected, ":")[0]));
            ++checked;
        }
    }
    CHECK(checked > 40);
}

TEST_CASE("--egress-allow is empty by default: no kernel has any network") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->egress_allow.empty());
}

TEST_CASE("--egress-allow takes comma lists and repeats, each rule in its canonical form") {
    auto r = parse({"--egress-allow=PyPI.org,*.Example.org:8443", "--egress-allow=127.0.0.1:8080",
                    "--egress-allow=[::1]:9000"});
    REQUIRE(r.config);
    CHECK(r.config->egress_allow == std::vector<std::string>{"pypi.org", "*.example.org:8443",
                                                             "127.0.0.1:8080", "[::1]:9000"});
}

TEST_CASE(
    "--egress-allow is a list in a config file and comma-separated in CALLISTO_EGRESS_ALLOW") {
    config_file file(R"({"egress-allow": ["pypi.org", "files.pythonhosted.org:443"]})");
    auto from_file = parse({file.flag()});
    REQUIRE(from_file.config);
    CHECK(from_file.config->egress_allow ==
          std::vector<std::string>{"pypi.org", "files.pythonhosted.org:443"});
    auto from_env = parse({}, {{"CALLISTO_EGRESS_ALLOW", "a.example.org,b.example.org:81"}});
    REQUIRE(from_env.config);
    CHECK(from_env.config->egress_allow ==
          std::vector<std::string>{"a.example.org", "b.example.org:81"});
    auto shown = parse({"--print-config", "--egress-allow=pypi.org:443"});
    REQUIRE(shown.config);
    CHECK(effective_config(*shown.config)["egress-allow"] ==
          nlohmann::json::array({"pypi.org:443"}));
}

TEST_CASE("--egress-allow refuses bad rules, naming the rule") {
    for (const char* bad :
         {"--egress-allow=", "--egress-allow=,", "--egress-allow=*.org", "--egress-allow=127.1:80",
          "--egress-allow=pypi.org:0", "--egress-allow=pypi.org:70000", "--egress-allow=::1",
          "--egress-allow=a*.example.org", "--egress-allow=*.1.2.3", "--egress-allow=pypi.org:x",
          "--egress-allow=exa mple.org"})
        check_refused({bad}, {"egress-allow"});
}

TEST_CASE("--egress-allow needs the sandbox: unsandboxed kernels have the host's network") {
    auto r = parse({"--egress-allow=pypi.org", "--sandbox=off"});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("needs the sandbox") != std::string::npos);
}

TEST_CASE("--egress-connections and --egress-rate cap each networked kernel's proxy") {
    auto defaults = parse({});
    REQUIRE(defaults.config);
    CHECK(defaults.config->egress_connections == 32);
    CHECK(defaults.config->egress_bytes_per_second == 0);
    auto r = parse({"--egress-connections=8", "--egress-rate=1MiB"});
    REQUIRE(r.config);
    CHECK(r.config->egress_connections == 8);
    CHECK(r.config->egress_bytes_per_second == (1u << 20));
    CHECK(parse({"--egress-rate=0"}).config->egress_bytes_per_second == 0);
    for (const char* bad :
         {"--egress-connections=0", "--egress-connections=x", "--egress-connections=5000",
          "--egress-rate=fast", "--egress-rate=-1"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse({bad}).config);
    }
}

TEST_CASE("config --paused-ttl: 30 days by default, a duration with a unit, 0 or off for ever") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->interpreter.paused_ttl == std::chrono::hours(24 * 30));
    CHECK(effective_config(*r.config)["paused-ttl"] == "30d");
    for (auto [flag, secs, shown] :
         {std::tuple<const char*, long long, const char*>{"--paused-ttl=7d", 7 * 86400, "7d"},
          {"--paused-ttl=12h", 12 * 3600, "12h"},
          {"--paused-ttl=90m", 90 * 60, "90m"},
          {"--paused-ttl=45s", 45, "45s"},
          {"--paused-ttl=3600", 3600, "1h"},
          {"--paused-ttl=0", 0, "off"},
          {"--paused-ttl=off", 0, "off"},
          {"--paused-ttl=3660d", 3660LL * 86400, "3660d"}}) {
        CAPTURE(flag);
        r = parse({flag});
        REQUIRE(r.config);
        CHECK(r.config->interpreter.paused_ttl.count() == secs);
        // As --print-config shows it, which a --config file takes back.
        CHECK(effective_config(*r.config)["paused-ttl"] == shown);
    }
    config_file file(R"({"paused-ttl": "2d"})");
    r = parse({file.flag()});
    REQUIRE(r.config);
    CHECK(r.config->interpreter.paused_ttl == std::chrono::hours(48));
    for (const char* bad :
         {"--paused-ttl=", "--paused-ttl=-1d", "--paused-ttl=1.5d", "--paused-ttl=30D",
          "--paused-ttl=d", "--paused-ttl=1w", "--paused-ttl=3661d", "--paused-ttl=99999999999999d",
          "--paused-ttl=never", "--paused-ttl= 5m", "--paused-ttl=5 m", "--paused-ttl=+5m",
          "--paused-ttl=00d", "--paused-ttl=0s"})
        check_refused({bad}, {"--paused-ttl", "a duration like 30d"});
}

TEST_CASE("config --pause-idle: seconds, off by default; its bad forms refused") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->interpreter.pause_idle.count() == 0);
    r = parse({"--pause-idle=3600"});
    REQUIRE(r.config);
    CHECK(r.config->interpreter.pause_idle.count() == 3600);
    for (const char* bad : {"--pause-idle=-1", "--pause-idle=soon",
                            "--pause-idle=", "--pause-idle=99999999999", "--pause-idle=1.5"})
        check_refused({bad}, {"--pause-idle"});
}

TEST_CASE("config --e2b-domain: a DNS name, in lower case; off by default; bad forms refused") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->e2b_domain.empty());
    CHECK(effective_config(*r.config)["e2b-domain"] == "off");
    r = parse({"--e2b-domain=Sandbox.Example.ORG."});
    REQUIRE(r.config);
    CHECK(r.config->e2b_domain == "sandbox.example.org");
    CHECK(effective_config(*r.config)["e2b-domain"] == "sandbox.example.org");
    r = parse({"--e2b-domain=e2b-local"});
    REQUIRE(r.config);
    CHECK(r.config->e2b_domain == "e2b-local");
    r = parse({"--e2b-domain=sandbox.test", "--e2b-domain=off"});
    REQUIRE(r.config);
    CHECK(r.config->e2b_domain.empty());
    // Its variable, digit and all: CALLISTO_E2B_DOMAIN.
    r = parse({}, {{"CALLISTO_E2B_DOMAIN", "Sandbox.Test"}});
    REQUIRE(r.config);
    CHECK(r.config->e2b_domain == "sandbox.test");
    for (const char* bad :
         {"--e2b-domain=", "--e2b-domain=*.example.org", "--e2b-domain=https://example.org",
          "--e2b-domain=example..org", "--e2b-domain=.example.org", "--e2b-domain=-a.example",
          "--e2b-domain=a-.example", "--e2b-domain=127.0.0.1", "--e2b-domain=exa_mple.org",
          "--e2b-domain=example.org:443", "--e2b-domain=ex ample.org"})
        check_refused({bad}, {"--e2b-domain", "a DNS name"});
    const std::string long_label(64, 'a');
    r = parse({"--e2b-domain=" + long_label + ".example"});
    CHECK_FALSE(r.config);
}

TEST_CASE("config --e2b-template: declared templates, none by default, shown as read back") {
    auto r = parse({});
    REQUIRE(r.config);
    CHECK(r.config->e2b_templates.empty());
    CHECK(effective_config(*r.config)["e2b-template"] == nlohmann::json::array());

    r = parse({"--e2b-template=data:ir:pool=2:timeout=900", "--e2b-template", "quick:python3"});
    REQUIRE(r.config);
    REQUIRE(r.config->e2b_templates.size() == 2);
    const auto& data = r.config->e2b_templates[0];
    CHECK(data.name == "data");
    CHECK(data.kernelspec == "ir");
    CHECK(data.pool == 2);
    CHECK(data.timeout == 900s);
    CHECK(r.config->e2b_templates[1].name == "quick");
    CHECK(r.config->e2b_templates[1].pool == 0);
    const auto shown = effective_config(*r.config)["e2b-template"];
    CHECK(shown == nlohmann::json::array({"data:ir:pool=2:timeout=900", "quick:python3"}));

    // From a file, and from the environment (a comma-separated list), as other lists.
    config_file file(R"({"e2b-template": ["a:python3:pool=1", "b:ir"]})");
    r = parse({file.flag()});
    REQUIRE(r.config);
    CHECK(r.config->e2b_templates.size() == 2);
    r = parse({}, {{"CALLISTO_E2B_TEMPLATE", "a:python3:timeout=60,b:ir:pool=3"}});
    REQUIRE(r.config);
    REQUIRE(r.config->e2b_templates.size() == 2);
    CHECK(r.config->e2b_templates[1].pool == 3);
    // The flags replace the file's list: no name is then declared twice.
    r = parse({file.flag(), "--e2b-template=a:ir"});
    REQUIRE(r.config);
    REQUIRE(r.config->e2b_templates.size() == 1);
    CHECK(r.config->e2b_templates[0].kernelspec == "ir");
}

TEST_CASE("config --e2b-template refuses every bad declaration, naming the flag and the fault") {
    const std::pair<std::vector<std::string>, const char*> bad[] = {
        {{"--e2b-template="}, "name and its kernelspec"},
        {{"--e2b-template=data"}, "name and its kernelspec"},
        {{"--e2b-template=my data:python3"}, "a name of 1-64"},
        {{"--e2b-template=data:"}, "a kernelspec's name"},
        {{"--e2b-template=data:python3:pool=65"}, "pool=N with N 0-64"},
        {{"--e2b-template=data:python3:pool=two"}, "pool=N with N 0-64"},
        {{"--e2b-template=data:python3:timeout=0"}, "timeout=SECS with SECS 1-86400"},
        {{"--e2b-template=data:python3:timeout=1h"}, "timeout=SECS with SECS 1-86400"},
        {{"--e2b-template=data:python3:memory=1GiB"}, "neither pool=N nor timeout=SECS"},
        {{"--e2b-template=data:python3", "--e2b-template=data:ir"}, "data is declared twice"},
        {{"--e2b-template=data:python3:timeout=7200", "--max-execution-timeout=3600"},
         "must not exceed --max-execution-timeout (3600 s)"},
    };
    for (const auto& [args, why] : bad) check_refused(args, {"--e2b-template", why});
    config_file twice(R"({"e2b-template": ["a:python3", "a:ir"]})");
    auto r = parse({twice.flag()});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("e2b-template in ") != std::string::npos);
    CHECK(r.message.find("a is declared twice") != std::string::npos);
    r = parse({}, {{"CALLISTO_E2B_TEMPLATE", "a:python3,a:ir"}});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("CALLISTO_E2B_TEMPLATE") != std::string::npos);
}
