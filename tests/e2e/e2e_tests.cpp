// Each case starts a fresh callisto and drives it with a real client program.

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "server_process.hpp"

using namespace callisto::e2e;

namespace {

const std::string python = CALLISTO_TEST_PYTHON;
const std::string source_dir = CALLISTO_SOURCE_DIR;

// Users ana (token ana-token-1, max_kernels 2), bob (bob-token-1) and root (root-token-1,
// admin), stored as the SHA-256 of their tokens. Removed by the caller.
std::filesystem::path write_users_file(const std::string& tag) {
    const auto users = std::filesystem::temp_directory_path() /
                       ("callisto-e2e-" + tag + "-" + std::to_string(::getpid()) + ".json");
    std::ofstream(users) << R"([
      {"name": "ana", "max_kernels": 2,
       "token_sha256": "5413abcae7f67f869d454a3fd136a2afd8298547e9a6557e08d477431152e363"},
      {"name": "bob",
       "token_sha256": "da35348540eea93333fbee67961c2b02777aff29018cbbd343e7b9ac2e259122"},
      {"name": "root", "role": "admin",
       "token_sha256": "588ac599344e31258de36ab84603a60430ef29f3d8887381b9aea73e7bdc9a7a"}])";
    return users;
}

void run_client(server_process& server, std::vector<std::string> argv, int timeout_s = 900,
                std::map<std::string, std::string> env = {}) {
    env["CALLISTO_URL"] = server.url();
    env["CALLISTO_TOKEN"] = server.token();
    env["CALLISTO_PID"] = std::to_string(server.pid());
#ifdef CALLISTO_E2E_TSAN
    env["CALLISTO_E2E_TSAN"] = "1";  // bounds on the gateway's RSS say nothing under TSan
#endif
    auto result = run_command(argv, env, timeout_s);
    INFO("client output:\n" << result.output);
    INFO("server log:\n" << server.log());
    CHECK_FALSE(result.timed_out);
    CHECK(result.exit_code == 0);
}

}  // namespace

TEST_CASE("python websocket-client suite: REST, execution, stdin, interrupt, restart, death") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_gateway_api.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE("python suite: bad input on the WebSocket gets clear errors and nothing breaks") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_bad_input.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE("python suite: malformed HTTP gets clear errors and the server keeps serving") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_http_bad_input.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE("culling: idle kernels go, connected and busy ones stay, culled ids answer 410") {
    server_process server({"--cull-idle-timeout=3", "--cull-interval=1"});
    run_client(server,
               {python, source_dir + "/tests/e2e/python/test_culling.py", "-k", "idle_kernel", "-k",
                "connected_kernel", "-k", "busy_kernel", "-k", "context_culled"});
    CHECK(server.stop() == 0);
}

TEST_CASE("culling with --cull-connected: attached clients get a notice before the kernel goes") {
    server_process server({"--cull-idle-timeout=3", "--cull-interval=1", "--cull-connected"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_culling.py", "-k", "notice"});
    CHECK(server.stop() == 0);
}

TEST_CASE("culling with users: a culled id answers 410 to its owner and admins, 404 to others") {
    const auto users = write_users_file("culled-users");
    {
        server_process server(
            {"--users=" + users.string(), "--cull-idle-timeout=3", "--cull-interval=1"});
        run_client(server, {python, source_dir + "/tests/e2e/python/test_culling.py", "-k",
                            "culled_id_is_private"});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove(users);
}

TEST_CASE("culling: an MCP session whose kernel was culled gets a new one, and says so") {
    server_process server({"--cull-idle-timeout=3", "--cull-interval=1"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_mcp_culled.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE("replay: a client reconnecting with ?since= gets the output it missed, in order") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_replay.py", "-k", "growing",
                        "-k", "reconnect", "-k", "since_must"});
    CHECK(server.stop() == 0);
}

TEST_CASE("replay: output dropped from a small replay buffer is announced as a gap") {
    server_process server({"--replay-buffer=64KiB"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_replay.py", "-k", "gap"});
    CHECK(server.stop() == 0);
}

TEST_CASE("a burst of output sent while the gateway is stopped arrives whole, in order") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_output_delivery.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "output caps: a runaway cell is cut for WebSocket clients with a notice; the kernel keeps "
    "working") {
    server_process server({"--ws-output-limit=1MiB", "--ws-rich-output-limit=2MiB"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_output_limits.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "users: the users file is read again on SIGHUP and on change; a removed user loses their "
    "WebSockets; --hash-token=- reads standard input") {
    const auto users = write_users_file("reload");
    {
        server_process server({"--users=" + users.string()});
        run_client(server, {python, source_dir + "/tests/e2e/python/test_users_reload.py"}, 300,
                   {{"CALLISTO_USERS_FILE", users.string()}});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove(users);
}

TEST_CASE("warm pool: creates claim pre-started kernels, the pool refills, none is shared") {
    server_process server({"--pool-size=1"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_pool.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE("users: kernels belong to their owner, admins see all, limits answer 429") {
    const auto users = write_users_file("users");
    {
        server_process server({"--users=" + users.string(), "--max-kernels=3"});
        run_client(server, {python, source_dir + "/tests/e2e/python/test_users.py"});
        // Interpreter contexts are kernels of their owner: private, and within the quota.
        run_client(server, {python, source_dir + "/tests/e2e/python/test_v1_owners.py"});
        // MCP sessions are their owner's, and her kernel quota applies to them.
        run_client(server, {python, source_dir + "/tests/e2e/python/test_mcp_users.py"});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove(users);
}

TEST_CASE(
    "snapshots: a Python context's state and files restored into a new context; another user's "
    "restore is 404, a tampered snapshot is refused; fork makes independent copies; 100 MiB pass "
    "the gateway in bounded memory") {
    const auto users = write_users_file("snapshots");
    const auto snapshots = std::filesystem::temp_directory_path() /
                           ("callisto-e2e-snapshots-" + std::to_string(::getpid()));
    {
        server_process server(
            {"--users=" + users.string(), "--snapshot-dir=" + snapshots.string()});
        run_client(server, {python, source_dir + "/tests/e2e/python/test_snapshots.py"}, 900,
                   {{"CALLISTO_SNAPSHOT_DIR", snapshots.string()}});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(snapshots);
    std::filesystem::remove(users);
}

TEST_CASE(
    "pause: a paused context frees its kernel, is listed paused, and its next execution or "
    "/resume brings its state back once; delete, another user's 404; it survives a SIGKILL of "
    "the gateway and a start with the same --state-dir; --pause-idle pauses an idle one; MCP's "
    "tools snapshot, fork, pause and resume with /v1's checks; --paused-ttl deletes a paused "
    "context from its record's pause time, across a restart") {
    const auto users = write_users_file("pause");
    const std::string root = "/tmp/cle2e-pause-" + std::to_string(::getpid());
    const std::string state = root + ".json";
    const std::vector<std::string> args = {"--users=" + users.string(), "--workdir-root=" + root,
                                           "--sandbox-uids=61300-61399"};
    const std::string script = source_dir + "/tests/e2e/python/test_pause.py";
    {
        server_process server(args);
        run_client(server, {python, script}, 900);
        run_client(server, {python, source_dir + "/tests/e2e/python/test_mcp_pause.py"}, 600);
        run_client(server, {python, script, "-k", "phase_before_restart"}, 300,
                   {{"CALLISTO_E2E_PHASE", "before_restart"}, {"CALLISTO_E2E_STATE", state}});
        server.crash();
    }
    {
        server_process server(args);
        run_client(server, {python, script, "-k", "phase_after_restart"}, 300,
                   {{"CALLISTO_E2E_PHASE", "after_restart"}, {"CALLISTO_E2E_STATE", state}});
        CHECK(server.stop() == 0);
    }
    {
        auto idle = args;
        idle.push_back("--pause-idle=2");
        server_process server(idle);
        run_client(server, {python, script, "-k", "phase_idle"}, 300,
                   {{"CALLISTO_E2E_PHASE", "idle"}});
        CHECK(server.stop() == 0);
    }
    {
        server_process server(args);
        run_client(server, {python, script, "-k", "phase_ttl_before"}, 300,
                   {{"CALLISTO_E2E_PHASE", "ttl_before"}, {"CALLISTO_E2E_STATE", state}});
        CHECK(server.stop() == 0);
    }
    {
        auto short_ttl = args;
        short_ttl.push_back("--paused-ttl=4s");
        short_ttl.push_back("--audit-log=" + root + "-audit.log");
        server_process server(short_ttl);
        run_client(server, {python, script, "-k", "phase_ttl_after"}, 300,
                   {{"CALLISTO_E2E_PHASE", "ttl_after"}, {"CALLISTO_E2E_STATE", state}});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(root);
    std::filesystem::remove(root + "-audit.log");
    std::filesystem::remove(state);
    std::filesystem::remove(users);
}

TEST_CASE(
    "kernel policies: reuse keeps state and resets kept kernels, fresh never shares, one-shot "
    "runs, recycling limits") {
    server_process server({"--recycle-max-uses=2"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_policies.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "reuse: a kept kernel's next context finds nothing of the last, for python3 forked and "
    "exec'd and for R") {
    const std::string script = source_dir + "/tests/e2e/python/test_reuse_isolation.py";
    {
        server_process server;
        run_client(server, {python, script}, 300,
                   {{"REUSE_KERNEL", "python3"}, {"REUSE_LAUNCH", "zygote"}});
        CHECK(server.stop() == 0);
    }
    server_process server({"--zygote=off"});
    run_client(server, {python, script}, 300,
               {{"REUSE_KERNEL", "python3"}, {"REUSE_LAUNCH", "exec"}});
    run_client(server, {python, script}, 300, {{"REUSE_KERNEL", "ir"}, {"REUSE_LAUNCH", "exec"}});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "execution limits: no timeout means --execution-timeout, at most the maximum; output budgets "
    "per request and MCP's model-sized one") {
    server_process server(
        {"--execution-timeout=2", "--max-execution-timeout=30", "--interrupt-grace=2"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_execution_limits.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "auto-restart: a dead kernel comes back a bounded number of times, then stays dead; a frozen "
    "one is killed first") {
    server_process server(
        {"--autorestart-limit=2", "--autorestart-window=600", "--heartbeat-timeout=2",
         "--pool-size=0"});  // no pool refilling while the test counts descriptors
    run_client(server, {python, source_dir + "/tests/e2e/python/test_autorestart.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE("keepalive: an idle WebSocket is pinged and stays open") {
    server_process server({"--ws-ping-interval=1"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_keepalive.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "past capacity: busy loops on every CPU; running executions all answered, new work refused "
    "503 with Retry-After, then accepted again") {
    // Thresholds the busy loops reach for certain on any machine: the behaviour is tested here,
    // the defaults in host_load_tests.
    server_process server({"--shed-cpu-pressure=80", "--shed-run-queue=4"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_overload.py"});
    CHECK(server.stop() == 0);
    CHECK(server.log().find("the host is past its capacity: ") != std::string::npos);
    CHECK(server.log().find("the host is below its capacity again") != std::string::npos);
}

TEST_CASE("keepalive: a client silent past --ws-ping-timeout is closed, and the log says why") {
    server_process server({"--ws-ping-interval=1", "--ws-ping-timeout=4"});
    run_client(
        server,
        {python, source_dir + "/tests/e2e/python/test_keepalive.py", "-k", "answers_nothing"}, 900,
        {{"PING_TIMEOUT", "4"}});
    CHECK(server.stop() == 0);
    CHECK(server.log().find("closed by the gateway: the client sent nothing, not even an answer "
                            "to a ping, for ") != std::string::npos);
}

TEST_CASE("@jupyterlab/services drives callisto unchanged") {
    server_process server;
    run_client(server, {"/usr/bin/env", "node", source_dir + "/tests/e2e/node/services_test.mjs"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "the MCP TypeScript SDK drives /mcp: tools, state, charts, tracebacks, files, session end") {
    server_process server;
    run_client(server, {"/usr/bin/env", "node", source_dir + "/tests/e2e/node/mcp_test.mjs"});
    CHECK(server.stop() == 0);
}

namespace {
// A port free on 127.0.0.2 now: the egress suite's destination listens there.
int free_port_on_127_0_0_2() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(0x7f000002);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}
}  // namespace

TEST_CASE(
    "E2B's SDKs drive callisto unchanged: sandboxes, runCode streamed, contexts, files, commands, "
    "timeouts; network on create; --e2b-domain's hosts; a declared template") {
    // Two free ports in a row on 127.0.0.2: the first allowed, the second served and refused.
    int port = free_port_on_127_0_0_2();
    while (port >= 65535) port = free_port_on_127_0_0_2();
    // A declared template of the R kernel: its sandboxes run R, one R kernel is kept ready.
    const std::string declared = "rdata:ir:pool=1:timeout=450";
    server_process server({"--egress-allow=127.0.0.2:" + std::to_string(port),
                           "--e2b-domain=sandbox.test", "--e2b-template=" + declared});
    run_client(server, {"/usr/bin/env", "node", source_dir + "/tests/e2e/node/e2b_test.mjs"}, 900,
               {{"CALLISTO_E2E_EGRESS_PORT", std::to_string(port)},
                {"CALLISTO_E2E_E2B_DOMAIN", "sandbox.test"},
                {"CALLISTO_E2E_E2B_TEMPLATE", declared}});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "the agent loop through E2B's SDK (examples/e2b_agent_loop.mjs): a scripted model fixes its "
    "bug from the traceback, a chart, the sandbox killed; the program's demo and refusals") {
    server_process server;
    run_client(server,
               {"/usr/bin/env", "node", source_dir + "/tests/e2e/node/e2b_example_test.mjs"}, 600);
    CHECK(server.stop() == 0);
}

TEST_CASE("the served OpenAPI document passes an independent OpenAPI 3.1 validator") {
    server_process server;
    run_client(server, {"/usr/bin/env", "node", source_dir + "/tests/e2e/node/openapi_test.mjs"});
    CHECK(server.stop() == 0);
}

TEST_CASE("the web UI runs code in headless Chromium") {
    // no --web-root: a binary of the build tree serves web/. The egress rule is for the admin
    // console's network column (nothing listens there: its kernel is only refused elsewhere).
    const auto egress_port = std::to_string(free_port_on_127_0_0_2());
    // A declared E2B template, for the console's list of sandboxes.
    const std::string e2b_template = "console:python3";
    server_process server(
        {"--egress-allow=127.0.0.2:" + egress_port, "--e2b-template=" + e2b_template});
    // A screenshot after every browser test, kept in the build directory to look at.
    const std::string shots = std::string(CALLISTO_E2E_BINARY_DIR) + "/web-ui-screenshots";
    std::filesystem::remove_all(shots);
    run_client(server, {"/usr/bin/env", "node", source_dir + "/tests/e2e/browser/web_ui_test.mjs"},
               900,
               {{"CALLISTO_E2E_SCREENSHOT_DIR", shots},
                {"CALLISTO_E2E_EGRESS_PORT", egress_port},
                {"CALLISTO_E2E_E2B_TEMPLATE", e2b_template}});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "the web UI is found without --web-root: the source tree's for a build, share/callisto/web "
    "beside an installed binary; a binary with none says so") {
    // From the build tree (as make run starts it): the sources' web/.
    {
        server_process server;
        std::string page;
        CHECK(http_request(server.port(), "GET", "/", server.token(), {}, &page) == 200);
        CHECK(page.find("<title>Callisto</title>") != std::string::npos);
        CHECK(server.log().find("web UI at / from ") != std::string::npos);
        CHECK(server.stop() == 0);
    }
    // A copy of the binary in an installed layout: <prefix>/bin/callisto serves
    // <prefix>/share/callisto/web. The shell execs it, so the server's pid stays its own.
    const std::filesystem::path prefix = "/tmp/cle2e-webroot-" + std::to_string(::getpid());
    std::filesystem::remove_all(prefix);
    std::filesystem::create_directories(prefix / "bin");
    std::filesystem::create_directories(prefix / "share/callisto/web");
    // A hard link where it can be (the binary is large), else a copy: /proc/self/exe names
    // the path it was started by either way.
    std::error_code linked;
    std::filesystem::create_hard_link(CALLISTO_BINARY, prefix / "bin/callisto", linked);
    if (linked) std::filesystem::copy_file(CALLISTO_BINARY, prefix / "bin/callisto");
    std::ofstream(prefix / "share/callisto/web/index.html") << "<p>installed-web-ui</p>";
    const std::vector<std::string> installed = {
        "/bin/sh", "-c", "shift; exec " + (prefix / "bin/callisto").string() + " \"$@\"", "sh"};
    {
        server_process server({"--zygote=off"}, installed);
        std::string page;
        CHECK(http_request(server.port(), "GET", "/", server.token(), {}, &page) == 200);
        CHECK(page.find("installed-web-ui") != std::string::npos);
        CHECK(server.log().find("web UI at / from " + (prefix / "share/callisto/web").string()) !=
              std::string::npos);
        CHECK(server.stop() == 0);
    }
    // Nothing beside it (and no UI under the install prefix on this host): the start says so.
    std::filesystem::remove_all(prefix / "share");
    if (std::filesystem::exists("/usr/local/share/callisto/web/index.html")) {
        MESSAGE("skipped the start without a web UI: this host has one installed");
    } else {
        server_process server({"--zygote=off"}, installed);
        std::string page;
        CHECK(http_request(server.port(), "GET", "/", server.token(), {}, &page) == 404);
        CHECK(server.log().find("no web UI found") != std::string::npos);
        CHECK(server.log().find("(no web UI: the API only") != std::string::npos);
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(prefix);
    // --web-root=off serves none, even from the build tree.
    server_process off({"--web-root=off"});
    CHECK(http_request(off.port(), "GET", "/", off.token()) == 404);
    CHECK(off.stop() == 0);
}

TEST_CASE("jupyter_server --gateway-url attaches to callisto") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_jupyter_server_gateway.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "README's Jupyter attach commands, as written: jupyter-nbclassic --gateway-url serves the "
    "notebook UI on callisto's kernels, as root with --allow-root and as another user without") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_jupyter_attach.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE("SIGTERM stops the server in order, leaving no kernel process, socket or file") {
    server_process server;
    const std::string runtime = server.runtime_dir().string();
    for (int i = 0; i < 3; ++i)
        REQUIRE(http_request(server.port(), "POST", "/api/kernels", server.token(),
                             R"({"name":"python3"})") == 201);
    CHECK(processes_mentioning(runtime).size() >= 3);
    CHECK(server.stop() == 0);
    // Kernels are reaped before the server exits; give the kernel a moment to vanish from /proc.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!processes_mentioning(runtime).empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(processes_mentioning(runtime).empty());
    CHECK_FALSE(std::filesystem::exists(runtime));
}

TEST_CASE("SIGTERM while the zygote still preloads leaves no zygote and no runtime directory") {
    server_process server;  // serving: the zygote is still importing (and writing its caches)
    const std::string runtime = server.runtime_dir().string();
    CHECK(server.stop() == 0);
    CHECK(processes_mentioning(runtime).empty());
    CHECK_FALSE(std::filesystem::exists(runtime));
}

TEST_CASE(
    "after a SIGKILL the next start on the same workdir root reaps the kernels, tmpfs mounts, "
    "cgroups and runtime root left behind") {
    const std::string root = "/tmp/cle2e-reap-" + std::to_string(::getpid());
    const std::string state = root + ".json";
    // Its own uids, so the stand-ins the client plants touch no other test's kernels. Without
    // a state directory kernels die with the gateway, and what they leave is reaped.
    const std::vector<std::string> args = {"--workdir-root=" + root, "--sandbox-uids=61000-61099",
                                           "--pool-size=0", "--state-dir=off"};
    const std::string script = source_dir + "/tests/e2e/python/test_crash_leftovers.py";
    {
        server_process first(args);
        run_client(first, {python, script, "-k", "before"}, 300, {{"CALLISTO_E2E_STATE", state}});
        first.crash();
    }
    {
        server_process second(args);
        INFO("server log:\n" << second.log());
        CHECK(second.log().find("leftovers of earlier instances on " + root) != std::string::npos);
        CHECK(second.log().find("killed") != std::string::npos);
        run_client(second, {python, script, "-k", "after"}, 300, {{"CALLISTO_E2E_STATE", state}});

        // While it runs, the root is its own: a second instance refuses to start and says why.
        std::string refusal;
        try {
            server_process third(args);
        } catch (const std::exception& e) {
            refusal = e.what();
        }
        CHECK(refusal.find("another callisto instance is running with --workdir-root=" + root) !=
              std::string::npos);
        CHECK(second.stop() == 0);
    }
    std::error_code ec;
    std::filesystem::remove(state, ec);
    std::filesystem::remove_all(root, ec);
}

TEST_CASE("callisto-load for 60 s: 100 clients over 10 kernels, the mixed scenario, nothing lost") {
    // The soak of docs/reliability.md in small: every snippet kind (prints, plots, errors,
    // sleeps, interrupts, one-shot fresh kernels), answered as expected, no connection failed.
    server_process server({"--pool-size=2"});
    const std::string report = "/tmp/cle2e-load-" + std::to_string(::getpid()) + ".json";
    auto run = run_command({CALLISTO_LOAD, "--url=" + server.url(), "--token=" + server.token(),
                            "--clients=100", "--kernels=10", "--duration=60", "--ramp-up=5",
                            "--think-ms=200", "--timeout=120", "--no-progress", "--json=" + report},
                           {}, 400);
    INFO("callisto-load:\n" << run.output);
    CHECK(run.exit_code == 0);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["answered"].get<int>() > 0);
    CHECK(j["lost"] == 0);
    CHECK(j["wrong"] == 0);
    CHECK(j["connection_errors"] == 0);
    for (const char* kind : {"tiny", "print", "plot", "fail", "sleep", "interrupt", "oneshot"})
        CHECK_MESSAGE(j["by_kind"].contains(kind), kind);
    CHECK(server.stop() == 0);
    std::filesystem::remove(report);
}

TEST_CASE(
    "callisto-load over https and wss: a TLS deployment load-tested, nothing lost; a certificate "
    "it does not trust stops it at once, saying how to trust it") {
    const std::string dir = "/tmp/cle2e-load-tls-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    auto made = run_command(
        {python, source_dir + "/tests/e2e/python/test_tls.py", "--make-certs", dir}, {}, 300);
    INFO(made.output);
    REQUIRE(made.exit_code == 0);
    server_process server(
        {"--certfile=" + dir + "/server.pem", "--keyfile=" + dir + "/server.key", "--pool-size=2"});
    REQUIRE(server.url().rfind("https://", 0) == 0);
    const std::string report = dir + "/load.json";
    auto load = [&](std::vector<std::string> args) {
        std::vector<std::string> argv = {CALLISTO_LOAD, "--token=" + server.token(),
                                         "--no-progress", "--json=" + report, "--timeout=60"};
        argv.insert(argv.end(), args.begin(), args.end());
        std::filesystem::remove(report);
        return run_command(argv, {}, 300);
    };
    auto clean = [&](const std::string& what) {
        std::ifstream in(report);
        const auto j = nlohmann::json::parse(in, nullptr, false);
        INFO(what);
        REQUIRE(j.is_object());
        CHECK(j["answered"].get<int>() > 0);
        CHECK(j["lost"] == 0);
        CHECK(j["wrong"] == 0);
        CHECK(j["connection_errors"] == 0);
        return j;
    };

    // The system's store does not know the test CA: refused before any kernel is made.
    auto refused = load({"--url=" + server.url(), "--duration=5"});
    INFO("untrusted:\n" << refused.output);
    CHECK(refused.exit_code == 2);
    CHECK(refused.output.find("certificate verify failed") != std::string::npos);
    CHECK(refused.output.find("--ca-file=FILE") != std::string::npos);
    CHECK(refused.output.find("--insecure-skip-verify") != std::string::npos);

    // The Jupyter WebSockets over wss:// (charts: large frames), interrupts over https://.
    auto run = load({"--url=" + server.url(), "--ca-file=" + dir + "/ca.pem",
                     "--mix=tiny=2,plot=1,interrupt=1", "--clients=20", "--kernels=4",
                     "--duration=10", "--think-ms=100"});
    INFO("jupyter over wss:\n" << run.output);
    CHECK(run.exit_code == 0);
    const auto j = clean("jupyter over wss");
    for (const char* kind : {"tiny", "interrupt"}) CHECK_MESSAGE(j["by_kind"].contains(kind), kind);

    // /v1 and one-shot executions over https://, by the certificate's host name (SNI, the name
    // checked); then a self-signed test certificate taken without verification.
    const std::string by_name = "https://localhost:" + std::to_string(server.port());
    run = load({"--url=" + by_name, "--ca-file=" + dir + "/ca.pem", "--api=v1",
                "--mix=tiny=3,oneshot=1", "--clients=10", "--kernels=2", "--duration=5"});
    INFO("v1 over https:\n" << run.output);
    CHECK(run.exit_code == 0);
    CHECK(clean("v1 over https")["by_kind"].contains("tiny"));
    run = load({"--url=" + server.url(), "--insecure-skip-verify", "--mix=tiny=1", "--clients=4",
                "--kernels=1", "--duration=3"});
    INFO("--insecure-skip-verify:\n" << run.output);
    CHECK(run.exit_code == 0);
    clean("--insecure-skip-verify");

    CHECK(server.stop() == 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "kernels outlive a SIGKILLed gateway and a SIGUSR2 upgrade; the next start adopts them with "
    "their variables, and reaps those that ended meanwhile") {
    const std::string root = "/tmp/cle2e-adopt-" + std::to_string(::getpid());
    const std::string state = root + ".json";
    // A ready timeout shorter than the cell kernel A runs across the crash: an adopted kernel
    // busy with it must wait for it, not be killed as one that never answered.
    const std::vector<std::string> args = {"--workdir-root=" + root, "--sandbox-uids=61100-61199",
                                           "--pool-size=0", "--kernel-ready-timeout=10"};
    const std::string script = source_dir + "/tests/e2e/python/test_gateway_restart.py";
    const std::map<std::string, std::string> env = {{"CALLISTO_E2E_STATE", state}};
    auto with = [](std::vector<std::string> a, const std::string& extra) {
        a.push_back(extra);
        return a;
    };
    {
        server_process first(with(args, "--zygote=off"));  // exec'd kernels (bwrap)
        run_client(first, {python, script, "-k", "before_crash"}, 300, env);
        first.crash();
    }
    auto down = run_command({python, script, "-k", "while_down"}, env, 60);
    INFO("while down:\n" << down.output);
    CHECK(down.exit_code == 0);
    {
        server_process second(args);  // zygote on: kernel C is forked
        run_client(second, {python, script, "-k", "after_crash"}, 300, env);
        INFO("server log:\n" << second.log());
        CHECK(second.log().find(" adopted: it kept running through the gateway restart") !=
              std::string::npos);
        CHECK(second.exit_on(SIGUSR2) == 0);
        // A, C, the /v1 context's and the E2B sandbox's two.
        CHECK(second.log().find("received SIGUSR2; exiting now and leaving 5 kernels running") !=
              std::string::npos);
    }
    {
        server_process third(args);
        run_client(third, {python, script, "-k", "after_upgrade"}, 300, env);
        const int stopped = third.stop();
        INFO("server log:\n" << third.log());
        CHECK(stopped == 0);
    }
    auto stopped = run_command({python, script, "-k", "after_stop"}, env, 60);
    INFO("after stop:\n" << stopped.output);
    CHECK(stopped.exit_code == 0);
    std::error_code ec;
    std::filesystem::remove(state, ec);
    std::filesystem::remove_all(root, ec);
}

TEST_CASE(
    "SIGTERM answers the requests in flight (an execution, an MCP tool call) before closing") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_stop_answers.py"});
    CHECK(server.stop() == 0);  // the client stopped it; this collects its exit status
}

TEST_CASE(
    "interpreter API: aggregated answer, event stream, executions by id, idempotency, queue, "
    "deadline ladder, caps, env, ANSI, events WebSocket, multipart uploads") {
    server_process server;
    for (const char* suite :
         {"test_v1_executions.py", "test_v1_files.py", "test_v1_events.py", "test_v1_openapi.py"})
        run_client(server, {python, source_dir + "/tests/e2e/python/" + suite});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "agent loop (examples/agent_loop.py): a scripted model fixes its bug from the traceback, in "
    "both function-calling shapes; the real API clients against a stand-in; the command line "
    "with no key") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_agent_loop.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "languages: bash and SQL in a Python context, R in its own, over /v1, the events WebSocket "
    "and MCP; GET /v1/languages") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_languages.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "R (IRkernel) through the Jupyter WebSocket and /v1, in the sandbox: plots, tables, errors, "
    "the deadline ladder, caps, and the escape attacks written in R") {
    // The escape suite's small limits, so the R bombs end quickly; a short heartbeat timeout,
    // which a busy R kernel (silent while it computes) must survive.
    server_process server({"--memory-limit=256MiB", "--pids-limit=64", "--disk-quota=64MiB",
                           "--heartbeat-timeout=2"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_r_kernel.py"}, 900);
    CHECK(server.stop() == 0);
}

TEST_CASE("@jupyterlab/services drives an R kernel unchanged") {
    server_process server;
    run_client(server,
               {"/usr/bin/env", "node", source_dir + "/tests/e2e/node/services_r_test.mjs"});
    CHECK(server.stop() == 0);
}

TEST_CASE("interpreter API: multipart uploads from Node's own FormData and fetch, read by pandas") {
    server_process server;
    run_client(server,
               {"/usr/bin/env", "node", source_dir + "/tests/e2e/node/upload_form_test.mjs"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "sandbox escape suite: every attack from kernel code fails and the gateway keeps serving") {
    // Small limits so the bombs end quickly; see docs/security.md for each attack. The kernels
    // attacked are forks of the zygote (the default); the fallback case below runs the suite
    // against bwrap's sandbox.
    server_process server({"--memory-limit=256MiB", "--pids-limit=64", "--disk-quota=64MiB"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_sandbox_escape.py"}, 900,
               {{"CALLISTO_E2E_LAUNCH", "zygote"}});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "zygote kernels: forked from a preloaded zygote, independent of each other, and every "
    "fork-server attack fails") {
    // A variable only the gateway's environment holds (not CALLISTO_*: those are options): no
    // kernel may see it, in its environment or in the memory it inherits from the zygote.
    const std::string secret_name = "E2E_GATEWAY_ONLY_SECRET";
    const std::string secret =
        "gateway-only-" + std::to_string(::getpid()) + "-" +
        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    REQUIRE(::setenv(secret_name.c_str(), secret.c_str(), 1) == 0);
    std::optional<server_process> server;
    try {
        // Small limits, as for the escape suite.
        server.emplace(std::vector<std::string>{"--memory-limit=256MiB", "--pids-limit=64",
                                                "--disk-quota=64MiB"});
    } catch (...) {
        ::unsetenv(secret_name.c_str());
        throw;
    }
    ::unsetenv(secret_name.c_str());
    run_client(*server,
               {python, source_dir + "/tests/e2e/python/test_zygote.py", "-k", "test_zygote_"}, 900,
               {{"CALLISTO_E2E_SECRET_NAME", secret_name},
                {"CALLISTO_E2E_SECRET_VALUE", secret},
                {"CALLISTO_E2E_RUNTIME_DIR", server->runtime_dir().string()}});
    CHECK(server->stop() == 0);
}

TEST_CASE(
    "zygote fallback: a kernelspec that opts out, and --zygote=off, start kernels through bwrap "
    "in the same sandbox") {
    // python3's kernel.json under another name, with metadata.callisto.zygote false.
    const std::string dir = "/tmp/cle2e-nozygote-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir + "/python3-nozygote");
    auto spec = nlohmann::json::parse(R"json({
        "argv": ["", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (no zygote)", "language": "python",
        "metadata": {"callisto": {"zygote": false}}})json");
    spec["argv"][0] = python;
    std::ofstream(dir + "/python3-nozygote/kernel.json") << spec.dump();
    const std::string suite = source_dir + "/tests/e2e/python/test_zygote.py";
    {
        // The opted-out spec execs; python3 is still forked; both see the same sandbox.
        server_process server({"--kernel-dir=" + dir});
        run_client(server, {python, suite, "-k", "test_fallback_opt_out"}, 900,
                   {{"CALLISTO_E2E_OPT_OUT_KERNEL", "python3-nozygote"}});
        CHECK(server.stop() == 0);
    }
    {
        // No zygote at all; the escape suite again, against bwrap's sandbox.
        server_process server(
            {"--zygote=off", "--memory-limit=256MiB", "--pids-limit=64", "--disk-quota=64MiB"});
        run_client(server, {python, suite, "-k", "test_fallback_zygote_off"}, 900,
                   {{"CALLISTO_E2E_ZYGOTE", "off"}});
        run_client(server, {python, source_dir + "/tests/e2e/python/test_sandbox_escape.py"}, 900,
                   {{"CALLISTO_E2E_LAUNCH", "exec"}});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "egress: a loopback destination an exact-address rule allows is reached by urllib, requests, "
    "curl, pip and R; every other destination and spelling is refused with its rule; a context "
    "without network has none") {
    const std::string dir = "/tmp/cle2e-egress-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto port = std::to_string(free_port_on_127_0_0_2());
    auto other = std::to_string(free_port_on_127_0_0_2());
    while (other == port) other = std::to_string(free_port_on_127_0_0_2());
    {
        // --shed-load=off: the suite starts a few kernels at once; a loaded CI host would
        // answer some of them 503, which says nothing about egress.
        server_process server({"--egress-allow=127.0.0.2:" + port + ",localhost:" + port,
                               "--audit-log=" + dir + "/audit.log", "--shed-load=off"});
        run_client(server, {python, source_dir + "/tests/e2e/python/test_egress.py"}, 900,
                   {{"CALLISTO_E2E_EGRESS_PORT", port},
                    {"CALLISTO_E2E_EGRESS_OTHER_PORT", other},
                    {"CALLISTO_E2E_AUDIT_LOG", dir + "/audit.log"}});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "egress after a gateway restart: an adopted networked kernel gets a new listener and its own "
    "proxy with the same rules; its next fetch is allowed and audited, the rest still refused") {
    const std::string root = "/tmp/cle2e-egress-adopt-" + std::to_string(::getpid());
    const std::string dir = root + "-files";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto port = std::to_string(free_port_on_127_0_0_2());
    auto other = std::to_string(free_port_on_127_0_0_2());
    while (other == port) other = std::to_string(free_port_on_127_0_0_2());
    const std::vector<std::string> args = {
        "--workdir-root=" + root,           "--sandbox-uids=61200-61299",        "--pool-size=0",
        "--egress-allow=127.0.0.2:" + port, "--audit-log=" + dir + "/audit.log", "--shed-load=off"};
    const std::map<std::string, std::string> env = {{"CALLISTO_E2E_EGRESS_PORT", port},
                                                    {"CALLISTO_E2E_EGRESS_OTHER_PORT", other},
                                                    {"CALLISTO_E2E_AUDIT_LOG", dir + "/audit.log"},
                                                    {"CALLISTO_E2E_STATE", dir + "/state.json"}};
    const std::string script = source_dir + "/tests/e2e/python/test_egress_restart.py";
    {
        server_process first(args);
        run_client(first, {python, script, "-k", "before_restart"}, 300, env);
        first.crash();
    }
    {
        server_process second(args);
        run_client(second, {python, script, "-k", "after_restart"}, 300, env);
        INFO("server log:\n" << second.log());
        CHECK(second.log().find(" adopted: it kept running through the gateway restart") !=
              std::string::npos);
        CHECK(second.stop() == 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::remove_all(root, ec);
}

TEST_CASE(
    "python environments: venvs and a conda-like prefix run sandboxed, forked and exec'd; the "
    "kernelspecs the sandbox cannot run are refused at start with their reason") {
    // The environments and their kernelspecs, as an admin makes them (the suite's --setup).
    const std::string dir = "/tmp/cle2e-envs-" + std::to_string(::getpid());
    const std::string suite = source_dir + "/tests/e2e/python/test_environments.py";
    const auto setup = run_command({python, suite, "--setup", dir}, {}, 300);
    INFO(setup.output);
    REQUIRE(setup.exit_code == 0);
    const std::string kernels = "--kernel-dir=" + dir + "/kernels";
    auto count = [](const std::string& text, const std::string& needle) {
        std::size_t n = 0;
        for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
            ++n;
        return n;
    };
    {
        // The zygote on: each venv forked from a zygote of its own.
        server_process server({kernels});
        run_client(server, {python, suite}, 900, {{"CALLISTO_E2E_ENVS", dir}});
        const auto log = server.log();
        INFO(log);
        for (const auto& [name, reason] :
             {std::pair{"env-missing", "gone/bin/python3: No such file or directory"},
              std::pair{"env-private", "(mode 0700) is not searchable by other users"},
              std::pair{"env-unrunnable", "(mode 0700) cannot be run by other users"},
              std::pair{"env-noipykernel", "finds no module ipykernel_launcher in the sandbox"}}) {
            const auto line = log.find(std::string("kernelspec ") + name + " (" + dir +
                                       "/kernels/" + name + ") is not offered: ");
            CHECK(line != std::string::npos);
            CHECK(log.find(reason, line) < log.find('\n', line));
        }
        CHECK(count(log, "kernelspec env-conda starts without a zygote: it runs " + dir +
                             "/conda/bin/python3") == 1);
        CHECK(count(log, "zygote for env-sys started") >= 1);
        CHECK(count(log, "zygote for env-isolated started") >= 1);
        // The isolated venv has no numpy: its zygote warms its shell up without it.
        CHECK(count(log, "warmed up) did not load") == 0);
        CHECK(server.stop() == 0);
    }
    {
        // No zygote: each exec'd through bwrap.
        server_process server({kernels, "--zygote=off"});
        run_client(server, {python, suite}, 900,
                   {{"CALLISTO_E2E_ENVS", dir}, {"CALLISTO_E2E_LAUNCH", "exec"}});
        CHECK(server.stop() == 0);
    }
    // A refused kernelspec named as the default stops the start, with its reason.
    const std::string runtime = "/tmp/cle2e-envs-refused-" + std::to_string(::getpid());
    const auto refused =
        run_command({CALLISTO_BINARY, "--port=0", "--token=refusal-token-1",
                     "--runtime-dir=" + runtime, "--workdir-root=" + runtime + "-work", kernels,
                     "--zygote=off", "--default-kernel=env-missing"},
                    {}, 120);
    INFO(refused.output);
    CHECK(refused.exit_code == 1);
    CHECK(refused.output.find("--default-kernel=env-missing: kernelspec env-missing is not "
                              "offered: " +
                              dir + "/gone/bin/python3: No such file or directory") !=
          std::string::npos);
    std::filesystem::remove_all(runtime + "-work");
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "hardening: deep JSON, bodies without a token, the body budget both ways, connection "
    "limits, downloads to clients that do not read") {
    // A soft open-files limit below the hard one, for the server to raise.
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    rlimit low = saved;
    low.rlim_cur = std::min<rlim_t>(1024, saved.rlim_max);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    std::optional<server_process> server;
    try {
        server.emplace(std::vector<std::string>{"--max-body-in-flight=8MiB", "--header-timeout=2",
                                                "--max-connections-per-address=40"});
    } catch (...) {
        ::setrlimit(RLIMIT_NOFILE, &saved);
        throw;
    }
    ::setrlimit(RLIMIT_NOFILE, &saved);
    run_client(*server,
               {python, source_dir + "/tests/e2e/python/test_hardening.py", "-k", "nested", "-k",
                "token", "-k", "unauthenticated", "-k", "in_flight", "-k", "open_files", "-k",
                "header_timeout", "-k", "one_address", "-k", "downloads_to_clients"});
    CHECK(server->stop() == 0);
}

TEST_CASE("hardening: past the connection cap (open files limit 256) clients are refused at once") {
    server_process server({}, {"/usr/bin/prlimit", "--nofile=256:256"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_hardening.py", "-k",
                        "connection_cap"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "hardening: a multipart form, a flooding kernel and a client outrunning its kernel cannot "
    "grow the gateway") {
    server_process server({"--memory-limit=512MiB"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_hardening.py", "-k",
                        "multipart_upload", "-k", "kernel_resending", "-k", "client_sending"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "hardening: an error and display metadata of tens of MB are cut in the answer, the events, "
    "MCP and the context's state record") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_hardening.py", "-k",
                        "error_and_metadata"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "hardening: an exception of 40 MB is cut by the python kernel, forked or exec'd, and ends at "
    "once; a reply over the limit from another kernel ends with a clear error") {
    // A kernelspec that runs none of Callisto's Python (ipykernel started by -c, not -m: no
    // bootstrap, no zygote), as a user's own kernel or another language's would.
    const std::string dir = "/tmp/cle2e-foreign-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir + "/python3-foreign");
    nlohmann::json spec = {
        {"argv",
         {python, "-c",
          "from ipykernel.kernelapp import launch_new_instance; launch_new_instance()", "-f",
          "{connection_file}"}},
        {"display_name", "Python 3 (not Callisto's)"},
        {"language", "python"}};
    std::ofstream(dir + "/python3-foreign/kernel.json") << spec.dump();
    const std::string suite = source_dir + "/tests/e2e/python/test_hardening.py";
    {
        server_process server({"--kernel-dir=" + dir});
        run_client(server,
                   {python, suite, "-k", "exception_of_40_mb", "-k", "reply_over_the_limit"}, 900,
                   {{"CALLISTO_E2E_LAUNCH", "zygote"},
                    {"CALLISTO_E2E_FOREIGN_KERNEL", "python3-foreign"}});
        CHECK(server.stop() == 0);
    }
    {
        server_process server({"--zygote=off"});
        run_client(server, {python, suite, "-k", "exception_of_40_mb"}, 900,
                   {{"CALLISTO_E2E_LAUNCH", "exec"}});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "hardening: 16 MiB execute_requests flooding a WebSocket, audited, hold neither their code "
    "nor its echo") {
    const std::string dir = "/tmp/cle2e-flood-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    {
        server_process server({"--audit-log=" + dir + "/audit.log"});
        run_client(server, {python, source_dir + "/tests/e2e/python/test_hardening.py", "-k",
                            "flooding_a_websocket"});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "health: /healthz and /readyz need no token, HEAD is GET without a body; SIGTERM drains "
    "readiness, then stops") {
    server_process server({"--drain-seconds=4"});
    run_client(server, {python, source_dir + "/tests/e2e/python/test_health.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "metrics: /metrics passes promtool, and a real Prometheus scraping it sees a workload's "
    "counts") {
    server_process server;
    run_client(server, {python, source_dir + "/tests/e2e/python/test_metrics.py"});
    CHECK(server.stop() == 0);
}

TEST_CASE(
    "tls: HTTPS and WSS with curl, websocket-client, jupyter_server --gateway-url and the example "
    "agent loop; TLS 1.2 at least; plain HTTP answered; SIGHUP reloads the certificate; sessions "
    "resumed without tickets, however the connection ended; mutual TLS, resumed sessions "
    "included") {
    const std::string dir = "/tmp/cle2e-tls-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    auto made = run_command(
        {python, source_dir + "/tests/e2e/python/test_tls.py", "--make-certs", dir}, {}, 300);
    INFO(made.output);
    REQUIRE(made.exit_code == 0);
    const std::map<std::string, std::string> env = {{"CALLISTO_CA", dir + "/ca.pem"},
                                                    {"CALLISTO_TLS_DIR", dir}};
    const std::string tls = source_dir + "/tests/e2e/python/test_tls.py";
    {
        server_process server(
            {"--certfile=" + dir + "/live.pem", "--keyfile=" + dir + "/live.key"});
        run_client(server,
                   {python, tls, "-k", "https", "-k", "wss", "-k", "plain_http", "-k", "tls_1_2",
                    "-k", "sighup", "-k", "client_hello_split", "-k", "without_tickets"},
                   900, env);
        // The path JupyterLab takes, over HTTPS to the gateway.
        run_client(server,
                   {python, source_dir + "/tests/e2e/python/test_jupyter_server_gateway.py"}, 900,
                   env);
        // The README's notebook UI command over HTTPS, trusting the CA by SSL_CERT_FILE.
        run_client(
            server,
            {python, source_dir + "/tests/e2e/python/test_jupyter_attach.py", "-k", "unprivileged"},
            900, env);
        // examples/agent_loop.py over HTTPS: --ca-file, $CALLISTO_CA, a clear refusal without.
        run_client(server,
                   {python, source_dir + "/tests/e2e/python/test_agent_loop.py", "-k", "https"},
                   900, env);
        CHECK(server.stop() == 0);
        CHECK(server.log().find("reloaded the TLS certificate") != std::string::npos);
        CHECK(server.log().find("received SIGHUP; kept the TLS certificate in use: --keyfile " +
                                dir + "/live.key: is a FIFO, not a regular file") !=
              std::string::npos);
    }
    {
        server_process server({"--certfile=" + dir + "/server.pem",
                               "--keyfile=" + dir + "/server.key",
                               "--client-ca=" + dir + "/ca.pem"});
        run_client(server, {python, tls, "-k", "client_certificate", "-k", "resumed_sessions"}, 900,
                   env);
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "two replicas behind nginx (deploy/nginx-callisto.conf): each user stays on one replica, "
    "the users spread over both") {
    // Twelve users and an admin, the same users file for both replicas.
    const std::string users = "/tmp/cle2e-replicas-" + std::to_string(::getpid()) + ".json";
    nlohmann::json entries = nlohmann::json::array();
    std::string tokens;
    auto hash = [](const std::string& token) {
        auto r = run_command({CALLISTO_BINARY, "--hash-token=" + token}, {}, 30);
        REQUIRE(r.exit_code == 0);
        return r.output.substr(0, r.output.find_first_of("\r\n"));
    };
    for (int i = 0; i < 12; ++i) {
        const std::string token = "replica-user-" + std::to_string(i) + "-token";
        entries.push_back({{"name", "user" + std::to_string(i)}, {"token_sha256", hash(token)}});
        tokens += token + " ";
    }
    entries.push_back(
        {{"name", "ops"}, {"role", "admin"}, {"token_sha256", hash("replica-admin-token")}});
    std::ofstream(users) << entries.dump();
    {
        server_process a({"--users=" + users, "--pool-size=2"});
        server_process b({"--users=" + users, "--pool-size=2"});
        run_client(a, {python, source_dir + "/tests/e2e/python/test_nginx_replicas.py"}, 900,
                   {{"CALLISTO_REPLICAS", a.url() + " " + b.url()},
                    {"CALLISTO_USER_TOKENS", tokens},
                    {"CALLISTO_ADMIN_TOKEN", "replica-admin-token"},
                    {"CALLISTO_SOURCE_DIR", source_dir}});
        CHECK(a.stop() == 0);
        CHECK(b.stop() == 0);
    }
    std::filesystem::remove(users);
}

TEST_CASE(
    "start-up refuses a mistyped kernelspec, a missing kernel dir, unusable TLS files and a "
    "taken port, leaving nothing") {
    const std::string runtime = "/tmp/cle2e-refused-" + std::to_string(::getpid());
    auto start = [&](std::vector<std::string> args) {
        std::vector<std::string> argv = {CALLISTO_BINARY, "--port=0", "--token=refusal-token-1",
                                         "--runtime-dir=" + runtime,
                                         "--workdir-root=" + runtime + "-work"};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, {}, 60);
    };
    auto r = start({"--default-kernel=pyhton3"});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("--default-kernel=pyhton3: no such kernelspec (found: ") !=
          std::string::npos);
    CHECK(r.output.find("python3") != std::string::npos);

    // A pool of a kernelspec that does not exist is refused as the default kernel is, not
    // left empty with a warning.
    r = start({"--pool=python4:2"});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("--pool=python4:2: no such kernelspec (found: ") != std::string::npos);
    CHECK(r.output.find("python3") != std::string::npos);
    CHECK(r.output.find("warm pool") == std::string::npos);

    r = start({"--kernel-dir=/nonexistent/kernels"});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("--kernel-dir=/nonexistent/kernels: no such directory") !=
          std::string::npos);

    // A workdir root under a directory only its owner may search (mktemp -d makes them 0700):
    // kernels running as the sandbox uids could not reach their workdirs.
    const std::string closed = runtime + "-closed";
    std::filesystem::create_directories(closed);
    std::filesystem::permissions(closed, std::filesystem::perms::owner_all);
    r = start({"--workdir-root=" + closed + "/work"});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(closed + " (mode 0700) is not searchable by other users") !=
          std::string::npos);
    std::filesystem::remove_all(closed);

    // TLS files that cannot be used, and TLS options that do not go together.
    r = start({"--certfile=/nonexistent/cert.pem", "--keyfile=/nonexistent/key.pem"});
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("--certfile /nonexistent/cert.pem: ") != std::string::npos);
    r = start({"--certfile=/etc/ssl/certs/ca-certificates.crt"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--certfile and --keyfile go together") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(runtime));

    // Started by a user without root, with the sandbox on: it says what it needs, and
    // --sandbox=off once, before it makes or changes any directory (a root-owned workdir root
    // once answered "chmod ...: Operation not permitted").
    const std::string owned = runtime + "-rootowned";
    std::filesystem::create_directories(owned + "/work");
    auto as_nobody = run_command({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                  "--clear-groups", CALLISTO_BINARY, "--version"},
                                 {}, 30);
    if (as_nobody.exit_code != 0) {
        MESSAGE("skipped the start without root: nobody cannot run " << CALLISTO_BINARY << ": "
                                                                     << as_nobody.output);
    } else {
        r = run_command({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                         CALLISTO_BINARY, "--port=0", "--token=refusal-token-1",
                         "--runtime-dir=" + runtime, "--workdir-root=" + owned + "/work"},
                        {}, 60);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find("the sandbox needs root") != std::string::npos);
        CHECK(r.output.find("uid 65534") != std::string::npos);
        CHECK(r.output.find("chmod") == std::string::npos);
        auto count = [&r](const std::string& what) {
            std::size_t n = 0;
            for (auto at = r.output.find(what); at != std::string::npos;
                 at = r.output.find(what, at + 1))
                ++n;
            return n;
        };
        CHECK(count("--sandbox=off") == 1);
        CHECK(count("development only") == 1);
        CHECK_FALSE(std::filesystem::exists(runtime));
        CHECK(std::filesystem::is_empty(owned + "/work"));
    }
    std::filesystem::remove_all(owned);

    server_process holder;  // holds a port
    r = start({"--port=" + std::to_string(holder.port())});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("cannot listen on 127.0.0.1:" + std::to_string(holder.port())) !=
          std::string::npos);
    CHECK(r.output.find("--port=0 picks a free port") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(runtime));
    CHECK(holder.stop() == 0);
    std::error_code ec;
    std::filesystem::remove_all(runtime + "-work", ec);
}

TEST_CASE(
    "configuration: a --config file, CALLISTO_ variables and flags, in that order; a bad "
    "file is refused by name") {
    const std::string dir = "/tmp/cle2e-config-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const std::string file = dir + "/callisto.json";
    std::ofstream(file) << R"({"port": 0, "max-kernels": 5, "memory-limit": "1GiB",
                               "pool-size": 0, "token": "from-the-config-file"})";

    auto r =
        run_command({CALLISTO_BINARY, "--config=" + file, "--memory-limit=3GiB", "--print-config"},
                    {{"CALLISTO_MAX_KERNELS", "7"}, {"CALLISTO_POOL_SIZE", "2"}}, 30);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto shown = nlohmann::json::parse(r.output);
    CHECK(shown["max-kernels"] == 7);        // the environment over the file
    CHECK(shown["pool-size"] == 2);          // likewise
    CHECK(shown["memory-limit"] == "3GiB");  // the flag over the file
    CHECK_FALSE(shown.contains("token"));    // left out, never "<set, hidden>"
    CHECK(r.output.find("from-the-config-file") == std::string::npos);
    // Defaults the host decides are shown as they are, not null.
    CHECK(shown["default-kernel"] == "python3");

    // `callisto --print-config > f.json; callisto --config=f.json --print-config` prints the
    // same, with a token in the environment or none.
    for (const std::map<std::string, std::string>& env :
         {std::map<std::string, std::string>{{"CALLISTO_TOKEN", "round-trip-token-1"}},
          std::map<std::string, std::string>{}}) {
        auto first =
            run_command({CALLISTO_BINARY, "--print-config", "--memory-limit=3GiB"}, env, 30);
        INFO(first.output);
        REQUIRE(first.exit_code == 0);
        const std::string printed = dir + "/printed.json";
        std::ofstream(printed) << first.output;
        auto second =
            run_command({CALLISTO_BINARY, "--config=" + printed, "--print-config"}, env, 30);
        INFO(second.output);
        CHECK(second.exit_code == 0);
        CHECK(second.output == first.output);
        CHECK(first.output.find("round-trip-token-1") == std::string::npos);
    }

    // The file's settings reach a running server: it serves the web root the file names.
    std::filesystem::create_directories(dir + "/web");
    std::ofstream(dir + "/web/index.html") << "<p>served-because-the-config-file-said-so</p>";
    std::ofstream(file) << nlohmann::json{{"web-root", dir + "/web"}}.dump();
    server_process server({"--config=" + file});
    std::string page;
    CHECK(http_request(server.port(), "GET", "/", server.token(), {}, &page) == 200);
    CHECK(page.find("served-because-the-config-file-said-so") != std::string::npos);
    CHECK(server.stop() == 0);

    std::ofstream(file) << R"({"max-kernel": 1})";
    r = run_command({CALLISTO_BINARY, "--config=" + file}, {}, 30);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("unknown option 'max-kernel' in config file " + file) != std::string::npos);
    r = run_command({CALLISTO_BINARY, "--port=0"}, {{"CALLISTO_MAX_KERNELS", "many"}}, 30);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("invalid value 'many' for CALLISTO_MAX_KERNELS") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "audit: every execution over the Jupyter WebSocket, /v1 and MCP is recorded before it runs; "
    "audit-verify --key proves the log and its rotations, and fails naming each broken line "
    "of an edited copy, one with a line deleted and one cut at its end") {
    const std::string dir = "/tmp/cle2e-audit-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string log = dir + "/audit.log";
    const std::string key = dir + "/state/audit.key";
    {
        // Small files: the workload rotates them, and the chain goes on through them.
        server_process server(
            {"--audit-log=" + log, "--audit-key=" + key, "--audit-rotate=2KiB", "--audit-keep=50"});
        run_client(
            server,
            {python, source_dir + "/tests/e2e/python/test_audit.py", "-k", "every_execution"}, 900,
            {{"CALLISTO_AUDIT_LOG", log}});
        CHECK(server.stop() == 0);
    }
    std::vector<std::string> files;
    for (int n = 50; n >= 1; --n)
        if (std::filesystem::exists(log + "." + std::to_string(n)))
            files.push_back(log + "." + std::to_string(n));
    files.push_back(log);
    CHECK(files.size() > 1);  // it rotated
    std::vector<std::string> verify = {CALLISTO_BINARY, "audit-verify", "--key", key};
    verify.insert(verify.end(), files.begin(), files.end());
    auto r = run_command(verify, {}, 60);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("intact: ") != std::string::npos);
    CHECK(r.output.find("none cut from the end") != std::string::npos);
    // Without the key there is nothing to check against.
    r = run_command({CALLISTO_BINARY, "audit-verify", log}, {}, 60);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--key is needed") != std::string::npos);

    std::vector<std::string> lines;
    for (const auto& f : files) {
        std::ifstream in(f);
        for (std::string line; std::getline(in, line);) lines.push_back(line);
    }
    REQUIRE(lines.size() >= 4);
    const std::string copy = dir + "/tampered.log";
    auto write_copy = [&](auto keep, auto edit) {
        std::ofstream out(copy, std::ios::trunc);
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (!keep(i)) continue;
            std::string line = lines[i];
            if (edit(i)) line.replace(line.find("\"time\":\""), 8, "\"time\":\"X");
            out << line << '\n';
        }
    };
    // One line edited, a later one deleted: both named.
    write_copy([](std::size_t i) { return i != 2; }, [](std::size_t i) { return i == 1; });
    r = run_command({CALLISTO_BINARY, "audit-verify", "--key", key, copy}, {}, 60);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(copy + ":2: broken: its MAC does not match its text") != std::string::npos);
    CHECK(r.output.find(copy + ":3: broken: seq 4 where 3 was due") != std::string::npos);
    // With the edit undone, the deletion is what is found.
    write_copy([](std::size_t i) { return i != 2; }, [](std::size_t) { return false; });
    r = run_command({CALLISTO_BINARY, "audit-verify", "--key", key, copy}, {}, 60);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(copy + ":3: broken: it does not follow the line before it") !=
          std::string::npos);
    // The end cut: found against the anchor kept beside the key.
    write_copy([&](std::size_t i) { return i + 2 < lines.size(); },
               [](std::size_t) { return false; });
    r = run_command({CALLISTO_BINARY, "audit-verify", "--key", key, copy}, {}, 60);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("were cut from the end") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("audit-verify --help prints its usage; an unknown option is not taken for a file") {
    auto r = run_command({CALLISTO_BINARY, "audit-verify", "--help"}, {}, 30);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("usage: callisto audit-verify --key KEY [--anchor ANCHOR] FILE...") !=
          std::string::npos);
    CHECK(r.output.find("cannot") == std::string::npos);
    r = run_command({CALLISTO_BINARY, "audit-verify", "-h"}, {}, 30);
    CHECK(r.exit_code == 0);
    r = run_command({CALLISTO_BINARY, "audit-verify", "--verbose", "audit.log"}, {}, 30);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("unknown option --verbose") != std::string::npos);
    r = run_command({CALLISTO_BINARY, "audit-verify"}, {}, 30);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("usage: callisto audit-verify") != std::string::npos);
}

TEST_CASE(
    "audit: when the audit log cannot be written, executions are refused, not run "
    "unrecorded") {
    // /dev/full takes the file open and fails every write (ENOSPC), as a full disk does.
    server_process server({"--audit-log=/dev/full"});
    for (int i = 0; i < 2; ++i) {
        std::string answer;
        const std::string refused = nlohmann::json{{"code", "print('must not run')"}}.dump();
        CHECK(http_request(server.port(), "POST", "/v1/executions", server.token(), refused,
                           &answer) == 200);
        INFO(answer);
        auto j = nlohmann::json::parse(answer);
        CHECK(j["status"] == "error");
        CHECK(j["error"]["name"] == "AuditUnavailable");
        CHECK(j["stdout"] == "");
    }
    run_client(server, {python, source_dir + "/tests/e2e/python/test_audit.py", "-k",
                        "refused_while_the_log_cannot_be_written"});
    CHECK(server.stop() == 0);
    CHECK(server.log().find("refused: the audit log cannot be written") != std::string::npos);
}

TEST_CASE(
    "audit: a full audit disk refuses executions only while it is full; a 2 MiB execution is "
    "recorded by its hash and size") {
    // The log on a tmpfs of its own, filled and freed by the client.
    const std::string dir = "/tmp/cle2e-audit-full-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir + "/disk");
    REQUIRE(::mount("callisto-e2e", (dir + "/disk").c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                    "size=4m,mode=0700") == 0);
    {
        server_process server(
            {"--audit-log=" + dir + "/disk/audit.log", "--audit-key=" + dir + "/state/audit.key"});
        run_client(
            server,
            {python, source_dir + "/tests/e2e/python/test_audit.py", "-k", "full_audit_disk"}, 300,
            {{"CALLISTO_AUDIT_LOG", dir + "/disk/audit.log"},
             {"CALLISTO_AUDIT_FILL", dir + "/disk/filler"}});
        CHECK(server.stop() == 0);
    }
    auto r = run_command({CALLISTO_BINARY, "audit-verify", "--key", dir + "/state/audit.key",
                          dir + "/disk/audit.log"},
                         {}, 60);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    ::umount2((dir + "/disk").c_str(), MNT_DETACH);
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "audit: an execute_request on control is refused, user_expressions and the debugger's "
    "evaluations are recorded, and the debugger stops at a breakpoint") {
    const std::string dir = "/tmp/cle2e-code-requests-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string log = dir + "/audit.log";
    {
        server_process server({"--audit-log=" + log});
        run_client(server, {python, source_dir + "/tests/e2e/python/test_code_requests.py"}, 300,
                   {{"CALLISTO_AUDIT_LOG", log}});
        CHECK(server.stop() == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "logs: --log-format=json writes one JSON object per line, with ids and never the "
    "token or the code") {
    server_process server({"--log-format=json", "--log-level=debug"});
    const std::string marker = "code-marker-" + std::to_string(::getpid());
    std::string answer;
    const int status = http_request(
        server.port(), "POST", "/v1/executions", server.token(),
        nlohmann::json{{"code", "print('" + marker + "')"}, {"timeout", 60}}.dump(), &answer);
    INFO(answer);
    CHECK(status == 200);
    CHECK(answer.find(marker) != std::string::npos);  // it ran, and printed
    CHECK(server.stop() == 0);

    const std::string log = server.log();
    std::istringstream lines(log);
    std::size_t count = 0, with_kernel_id = 0, access_lines = 0;
    std::string logged;  // the log lines, without the banner
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        // The server's own banner goes to stdout, which the harness also captures.
        if (line.rfind("Callisto is serving", 0) == 0 || line.rfind("  ", 0) == 0) continue;
        logged += line + "\n";
        INFO(line);
        auto j = nlohmann::json::parse(line, nullptr, false);
        REQUIRE_FALSE(j.is_discarded());
        CHECK(j.contains("time"));
        CHECK(j.contains("level"));
        CHECK(j.contains("component"));
        CHECK(j.contains("message"));
        if (j.contains("kernel_id")) ++with_kernel_id;
        // An access line's figures are fields, not only words of its message.
        if (j["component"] == "access" && j.value("route", "") == "oneshot_create") {
            ++access_lines;
            CHECK(j["method"] == "POST");
            CHECK(j["status"] == "200");
            CHECK(j.contains("duration_ms"));
            CHECK(std::stoul(j["bytes"].get<std::string>()) > 0);
        }
        ++count;
    }
    CHECK(count > 3);
    CHECK(with_kernel_id > 0);
    CHECK(access_lines == 1);
    // The start-up banner (stdout, which the harness captures too) prints the token on
    // purpose; no log line may.
    CHECK(logged.find(server.token()) == std::string::npos);
    CHECK(logged.find(marker) == std::string::npos);
}
